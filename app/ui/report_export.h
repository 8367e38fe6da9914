#pragma once
// Writes a design-review report into a folder: report.md and report.html (design_report.h) with
// their PNG figures beside them. Every file is written atomically (writeFileAtomically): figures
// are rendered to a temporary folder first, then moved into place byte for byte.

#include <QString>
#include <QStringList>
#include <functional>
#include <vector>

#include "app/analysis/design_report.h"

namespace ddpscope::ui {

struct ReportFigure {
  QString file_name;  // e.g. "timeline.png", as named in the DesignReportInput
  std::function<bool(const QString& path, QString* error)> render;
};

// Returns false with a message naming the file on failure; *written lists the files made.
bool writeDesignReport(const analysis::DesignReportInput& input,
                       const std::vector<ReportFigure>& figures, const QString& dir,
                       QStringList* written, QString* error);

}  // namespace ddpscope::ui
