#include "app/ui/report_export.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <stdexcept>

#include "tracer/format/file_io.h"

namespace ddpscope::ui {

bool writeDesignReport(const analysis::DesignReportInput& input,
                       const std::vector<ReportFigure>& figures, const QString& dir,
                       QStringList* written, QString* error) {
  auto fail = [&](const QString& message) {
    if (error) *error = message;
    return false;
  };
  const QDir out(dir);
  if (!out.exists() && !QDir().mkpath(dir))
    return fail(QStringLiteral("cannot create the report folder %1").arg(dir));
  QTemporaryDir scratch;
  if (!scratch.isValid()) return fail(QStringLiteral("cannot create a temporary folder"));
  std::vector<std::pair<QString, std::string>> files;
  for (const auto& figure : figures) {
    const QString tmp = scratch.filePath(figure.file_name);
    QString why;
    if (!figure.render(tmp, &why))
      return fail(QStringLiteral("cannot render %1: %2").arg(figure.file_name, why));
    QFile f(tmp);
    if (!f.open(QIODevice::ReadOnly))
      return fail(QStringLiteral("cannot read back %1").arg(figure.file_name));
    files.emplace_back(figure.file_name, f.readAll().toStdString());
  }
  files.emplace_back(QStringLiteral("report.md"), analysis::designReportMarkdown(input));
  files.emplace_back(QStringLiteral("report.html"), analysis::designReportHtml(input));
  for (const auto& [name, bytes] : files) {
    const QString path = out.filePath(name);
    try {
      trace::writeFileAtomically(QFile::encodeName(path).toStdString(), bytes);
    } catch (const std::exception& e) {
      return fail(QString::fromStdString(e.what()));
    }
    if (written) *written << path;
  }
  return true;
}

}  // namespace ddpscope::ui
