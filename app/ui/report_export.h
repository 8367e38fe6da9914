#pragma once
// Writes a design-review report into a folder: report.md and report.html (design_report.h) with
// their PNG figures beside them. Figures are rendered into memory, then every file is written to a
// temporary file beside its destination and renamed into place only when all were written in full
// (writeFilesAtomically): a full disk leaves the folder as it was and says why.

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <functional>
#include <vector>

#include "app/analysis/design_report.h"

namespace ddpscope::ui {

struct ReportFigure {
  QString file_name;  // e.g. "timeline.png", as named in the DesignReportInput
  std::function<bool(QByteArray* png, QString* error)> render;
};

// Returns false with a message naming the file and the cause on failure; *written lists the files
// made (the figures and the report; the manifest `.ddpscope-report` of the figures' names is
// written beside them, not listed). Written into a folder that held a report (its manifest, or
// without one the figures its report.md shows), the figures that report had and this one does not
// write are removed once it is written: no figure of another run is left beside it, and no other
// file is touched.
bool writeDesignReport(const analysis::DesignReportInput& input,
                       const std::vector<ReportFigure>& figures, const QString& dir,
                       QStringList* written, QString* error);

}  // namespace ddpscope::ui
