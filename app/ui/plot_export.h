#pragma once
// Writing a plot to PNG (with a scale factor), SVG or PDF, chosen by the file's extension.
// Figures are rendered into memory first and then written atomically (a temporary file beside the
// destination, then a rename): a failed write (disk full, a file size limit, permissions) says why
// and leaves the destination as it was, never half a file.

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

class QCPTextElement;
class QCustomPlot;
class QWidget;

namespace ddpscope::ui {

struct LoadedRun;

enum class ExportFormat { Png, Svg, Pdf };
std::optional<ExportFormat> exportFormatFor(const QString& path);

// Renders `plot` at width x height logical pixels into *out (PNG: times `scale` device pixels;
// PDF: one point per pixel). Returns false with a message in *error when nothing could be drawn.
bool renderPlot(QCustomPlot* plot, ExportFormat format, int width, int height, double scale,
                QByteArray* out, QString* error);
// Renders a whole widget (a window, a panel).
bool renderWidget(QWidget* widget, ExportFormat format, double scale, QByteArray* out,
                  QString* error);

// Checks that `path` names a supported format in a folder that exists and can be written, before
// anything is rendered. Returns the format, or nullopt with a message naming the file.
std::optional<ExportFormat> checkExportPath(const QString& path, QString* error);

// Writes each (path, bytes) pair: every file goes to a temporary file beside its destination
// first, and only when all were written in full are they renamed into place. On failure the
// temporary files are removed, no destination is touched, and *error names the file and the
// system's reason ("No space left on device", "File too large", "Permission denied").
bool writeFilesAtomically(const std::vector<std::pair<QString, QByteArray>>& files, QString* error);
bool writeFileAtomically(const QString& path, const QByteArray& bytes, QString* error);

// A panel whose chart File ▸ Export current chart writes when its tab is showing.
class ChartExport {
 public:
  virtual ~ChartExport() = default;
  // Writes the chart in the light theme (PNG/SVG/PDF by the extension), with what a slide needs
  // to say what it shows.
  virtual bool exportChart(const QString& path, double scale, QString* error) = 0;
};

// Renders a figure into memory in the given format; false with a message in *error when it
// could not.
using RenderFigure = std::function<bool(ExportFormat format, QByteArray* out, QString* error)>;
// What every export does: checkExportPath, then `render`, then writeFileAtomically. Nothing is
// rendered for a bad path, and the destination is untouched when rendering or writing fails.
bool exportRendered(const QString& path, QString* error, const RenderFigure& render);

// A title line above a chart while it is rendered: inserted as the first row of the chart's
// layout on construction (nothing when the text is empty), removed on destruction, leaving the
// layout as it was.
class TitleRow {
 public:
  TitleRow(QCustomPlot* chart, const QString& text, int point_size);
  ~TitleRow();
  TitleRow(const TitleRow&) = delete;
  TitleRow& operator=(const TitleRow&) = delete;
  // How many lines the title has (0 when there is none), for the room it takes.
  int lines() const;
  // The width its longest line needs, with a margin on each side (0 when there is none): a
  // figure at least this wide shows the whole title.
  int width() const;

 private:
  QCustomPlot* chart_;
  QCPTextElement* line_ = nullptr;
};

// The numbers a figure carries under its chart, for a slide to be read without the app: lines
// of text above a table (a header row, then rows; the first column left-aligned, the others
// right-aligned), lines of notes below it, word-wrapped to the figure's width.
struct FigureTable {
  QStringList above;
  QString warning;  // drawn in bold after the lines above (empty: none)
  QStringList header;
  std::vector<QStringList> rows;
  QStringList below;
};

// A FigureTable under a chart while it is rendered: added as the last row of the chart's layout
// on construction, removed on destruction, leaving the layout as it was.
class TableRow {
 public:
  // width: the width the figure will be rendered at (the notes are wrapped to it).
  TableRow(QCustomPlot* chart, const FigureTable& table, int width, int point_size = 9);
  ~TableRow();
  TableRow(const TableRow&) = delete;
  TableRow& operator=(const TableRow&) = delete;
  // The room it takes below the chart, in logical pixels.
  int height() const;
  // The width the table's columns need, with a margin on each side: a figure at least this wide
  // shows every cell whole.
  int width() const;

 private:
  QCustomPlot* chart_;
  class Element;
  Element* element_ = nullptr;
};

// checkExportPath + renderPlot + writeFileAtomically.
bool exportPlot(QCustomPlot* plot, const QString& path, int width, int height, double scale,
                QString* error);
// A chart of the app (light theme) with `title` as a line above it, at least min_width x
// min_height: checkExportPath, render, write atomically; the chart is left as it was.
bool exportTitledChart(QCustomPlot* chart, const QString& title, const QString& path, double scale,
                       QString* error, int min_width = 640, int min_height = 400);
// The chart of a panel showing `run` (null: none): exportTitledChart with the run's title
// (runTitle, on two lines).
bool exportRunChart(QCustomPlot* chart, const LoadedRun* run, const QString& path, double scale,
                    QString* error);
// checkExportPath + renderWidget + writeFileAtomically.
bool exportWidget(QWidget* widget, const QString& path, double scale, QString* error);

}  // namespace ddpscope::ui
