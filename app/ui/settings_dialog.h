#pragma once
// The settings (agent, launcher template, hostfile, traces folder, theme, classification rules),
// edited in a dialog and kept with QSettings (app_settings.h). The rules editor takes the user's
// rules in the rules-file format (docs/RULES.md), checks them with the analysis library's parser
// as they are typed (the error names the line), and on OK the runs open are analysed again with
// them, off the GUI thread.

#include <memory>

#include "app/analysis/rules.h"

class QWidget;

namespace ddpscope::ui {

class Session;

// Shows the dialog; true when the user accepted it (the settings are then saved). When the
// rules changed and `session` is given, its runs are analysed again with them (applyRules).
bool editRunSettings(QWidget* parent, Session* session = nullptr);

// Analyses every run open in `session` again with `rules`, off the GUI thread, and puts each in
// the place of the old one when all are done. A later call supersedes an earlier one still
// running (its results are dropped); a run closed meanwhile is not brought back.
void applyRules(Session* session, std::shared_ptr<const analysis::ClassRules> rules);

}  // namespace ddpscope::ui
