#pragma once
// The run settings (agent, launcher template, hostfile, traces folder, theme), edited in a
// dialog and kept with QSettings (app_settings.h).

class QWidget;

namespace ddpscope::ui {

// Shows the dialog; true when the user accepted it (the settings are then saved).
bool editRunSettings(QWidget* parent);

}  // namespace ddpscope::ui
