#include "app/ui/report_export.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <utility>

#include "app/ui/plot_export.h"

namespace ddpscope::ui {

namespace {
// The figures a report wrote, one file name a line, beside report.md.
constexpr const char* kReportManifest = ".ddpscope-report";
}  // namespace

bool writeDesignReport(const analysis::DesignReportInput& input,
                       const std::vector<ReportFigure>& figures, const QString& dir,
                       QStringList* written, QString* error) {
  auto fail = [&](const QString& message) {
    if (error) *error = message;
    return false;
  };
  const QDir out(dir);
  // A report is a folder of files; a file (or anything else) already at that path is not one.
  if (const QFileInfo at(dir); at.exists() && !at.isDir())
    return fail(QStringLiteral("%1 is a file, not a folder: a report is a folder (report.md, "
                               "report.html and its figures); give a folder's name")
                    .arg(dir));
  const bool made_folder = !QFileInfo(dir).isDir();
  if (made_folder && !QDir().mkpath(dir))
    return fail(QStringLiteral("cannot create the report folder %1").arg(dir));
  std::vector<std::pair<QString, QByteArray>> files;
  for (const auto& figure : figures) {
    QByteArray bytes;
    QString why;
    if (!figure.render(&bytes, &why))
      return fail(QStringLiteral("cannot render %1: %2").arg(figure.file_name, why));
    files.emplace_back(out.filePath(figure.file_name), std::move(bytes));
  }
  const std::string md = analysis::designReportMarkdown(input);
  const std::string html = analysis::designReportHtml(input);
  files.emplace_back(out.filePath(QStringLiteral("report.md")), QByteArray::fromStdString(md));
  files.emplace_back(out.filePath(QStringLiteral("report.html")), QByteArray::fromStdString(html));
  // The figures a report in this folder wrote before (its manifest, else those its report.md
  // shows): those this one does not write would be read as this run's, and are removed once it
  // is written. Nothing else is touched.
  const QString manifest = out.filePath(QString::fromLatin1(kReportManifest));
  QStringList previous;
  if (QFile old(manifest); !made_folder && old.open(QIODevice::ReadOnly)) {
    for (const QString& line : QString::fromUtf8(old.readAll()).split(QLatin1Char('\n')))
      if (!line.trimmed().isEmpty()) previous << line.trimmed();
  } else if (QFile old_md(out.filePath(QStringLiteral("report.md")));
             !made_folder && old_md.open(QIODevice::ReadOnly)) {
    // A report written before reports had a manifest (or copied without it): the figures its
    // report.md shows, as ![...](name.png).
    const QRegularExpression link(QStringLiteral("\\]\\(([^()/\\s]+\\.png)\\)"));
    for (auto it = link.globalMatch(QString::fromUtf8(old_md.readAll())); it.hasNext();)
      previous << it.next().captured(1);
  }
  QStringList ours;
  for (const auto& figure : figures)
    ours << figure.file_name;
  files.emplace_back(manifest, (ours.join(QLatin1Char('\n')) + QLatin1Char('\n')).toUtf8());
  if (!writeFilesAtomically(files, error)) {
    if (made_folder) QDir().rmdir(dir);  // only if still empty
    return false;
  }
  // Only names a report gives its figures, in this folder.
  const QRegularExpression figure_name(
      QStringLiteral("^(timeline|sweep|predicted|compare|step-[0-9]+)\\.png$"));
  for (const QString& name : previous)
    if (figure_name.match(name).hasMatch() && !ours.contains(name))
      QFile::remove(out.filePath(name));
  if (written)
    for (const auto& [path, bytes] : files)
      if (path != manifest) *written << path;
  return true;
}

}  // namespace ddpscope::ui
