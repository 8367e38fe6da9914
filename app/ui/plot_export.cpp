#include "app/ui/plot_export.h"

#include "tracer/format/file_io.h"

#include <qcustomplot.h>
#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QFontMetrics>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QWidget>
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "app/ui/palette.h"
#include "app/ui/plot_style.h"
#include "app/ui/run_text.h"

namespace ddpscope::ui {

std::optional<ExportFormat> exportFormatFor(const QString& path) {
  const QString ext = QFileInfo(path).suffix().toLower();
  if (ext == "png") return ExportFormat::Png;
  if (ext == "svg") return ExportFormat::Svg;
  if (ext == "pdf") return ExportFormat::Pdf;
  return std::nullopt;
}

namespace {
bool fail(QString* error, const QString& message) {
  if (error) *error = message;
  return false;
}

bool pdfPage(QPdfWriter& pdf, QSizeF size) {
  pdf.setCreator(QStringLiteral("ddpscope"));
  pdf.setTitle(QStringLiteral("ddpscope"));
  pdf.setResolution(72);  // one point per logical pixel
  return pdf.setPageLayout(
      QPageLayout(QPageSize(size, QPageSize::Point, QString(), QPageSize::ExactMatch),
                  QPageLayout::Portrait, QMarginsF(0, 0, 0, 0)));
}
}  // namespace

std::optional<ExportFormat> checkExportPath(const QString& path, QString* error) {
  const auto format = exportFormatFor(path);
  if (!format) {
    fail(error,
         QStringLiteral("cannot export to %1: use a .png, .svg or .pdf file name").arg(path));
    return std::nullopt;
  }
  const QFileInfo file(path);
  const QFileInfo dir(file.absolutePath());
  if (!dir.isDir()) {
    fail(error,
         QStringLiteral("cannot write %1: folder %2 does not exist").arg(path, dir.filePath()));
    return std::nullopt;
  }
  if (!dir.isWritable()) {
    fail(error, QStringLiteral("cannot write %1: folder is not writable").arg(path));
    return std::nullopt;
  }
  if (file.isDir()) {
    fail(error, QStringLiteral("cannot write %1: it is a folder").arg(path));
    return std::nullopt;
  }
  return format;
}

bool writeFilesAtomically(const std::vector<std::pair<QString, QByteArray>>& files,
                          QString* error) {
  std::vector<std::string> names;  // kept alive for the views below
  std::vector<std::pair<std::string, std::string_view>> views;
  names.reserve(files.size());
  for (const auto& [path, bytes] : files) {
    names.push_back(QFile::encodeName(path).toStdString());
    views.emplace_back(names.back(),
                       std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size())));
  }
  try {
    trace::writeFilesAtomically(views);  // the format library's writer, for traces too
  } catch (const std::exception& e) {
    return fail(error, QString::fromLocal8Bit(e.what()));
  }
  return true;
}

bool writeFileAtomically(const QString& path, const QByteArray& bytes, QString* error) {
  return writeFilesAtomically({{path, bytes}}, error);
}

bool renderPlot(QCustomPlot* plot, ExportFormat format, int width, int height, double scale,
                QByteArray* out, QString* error) {
  if (width <= 0 || height <= 0) return fail(error, QStringLiteral("cannot export an empty plot"));
  // As many legend items a row as the figure's width holds, in the replots of the render too.
  const LegendRenderWidth rendering(plot, width);
  fitLegendToWidth(plot, width);
  out->clear();
  QBuffer buffer(out);
  buffer.open(QIODevice::WriteOnly);
  bool ok = false;
  switch (format) {
    case ExportFormat::Png: {
      QImage image = plot->toPixmap(width, height, scale).toImage();
      const int dots_per_metre = qRound(96 / 0.0254);  // 96 dpi, as QCustomPlot::savePng
      image.setDotsPerMeterX(dots_per_metre);
      image.setDotsPerMeterY(dots_per_metre);
      ok = !image.isNull() && image.save(&buffer, "PNG");
      break;
    }
    case ExportFormat::Svg: {
      QSvgGenerator svg;
      svg.setOutputDevice(&buffer);
      svg.setSize(QSize(width, height));
      svg.setViewBox(QRect(0, 0, width, height));
      svg.setTitle(QStringLiteral("ddpscope"));
      QCPPainter painter;
      ok = painter.begin(&svg);
      if (ok) {
        plot->toPainter(&painter, width, height);
        ok = painter.end();
      }
      break;
    }
    case ExportFormat::Pdf: {
      QPdfWriter pdf(&buffer);
      ok = pdfPage(pdf, QSizeF(width, height));
      QCPPainter painter;
      ok = ok && painter.begin(&pdf);
      if (ok) {
        painter.setMode(QCPPainter::pmVectorized);
        painter.setMode(QCPPainter::pmNonCosmetic);  // line widths scale with the page
        plot->toPainter(&painter, width, height);
        ok = painter.end();
      }
      break;
    }
  }
  if (!ok || out->isEmpty())
    return fail(error, QStringLiteral("cannot draw the plot (%1 x %2)").arg(width).arg(height));
  return true;
}

bool renderWidget(QWidget* widget, ExportFormat format, double scale, QByteArray* out,
                  QString* error) {
  const QSize size = widget->size();
  if (size.isEmpty()) return fail(error, QStringLiteral("cannot export an empty widget"));
  out->clear();
  QBuffer buffer(out);
  buffer.open(QIODevice::WriteOnly);
  bool ok = false;
  switch (format) {
    case ExportFormat::Png: {
      QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
      image.setDevicePixelRatio(scale);
      image.fill(colours::kLightBackground);
      widget->render(&image);
      ok = image.save(&buffer, "PNG");
      break;
    }
    case ExportFormat::Svg: {
      QSvgGenerator svg;
      svg.setOutputDevice(&buffer);
      svg.setSize(size);
      svg.setViewBox(QRect(QPoint(0, 0), size));
      QPainter painter(&svg);
      widget->render(&painter);
      ok = painter.end();
      break;
    }
    case ExportFormat::Pdf: {
      QPdfWriter pdf(&buffer);
      ok = pdfPage(pdf, QSizeF(size));
      QPainter painter(&pdf);
      widget->render(&painter);
      ok = painter.end() && ok;
      break;
    }
  }
  if (!ok || out->isEmpty()) return fail(error, QStringLiteral("cannot draw the widget"));
  return true;
}

bool exportRendered(const QString& path, QString* error, const RenderFigure& render) {
  const auto format = checkExportPath(path, error);
  if (!format) return false;
  QByteArray bytes;
  return render(*format, &bytes, error) && writeFileAtomically(path, bytes, error);
}

TitleRow::TitleRow(QCustomPlot* chart, const QString& text, int point_size) : chart_(chart) {
  if (!text.isEmpty()) line_ = addChartTitle(chart_, text, point_size);
}

TitleRow::~TitleRow() {
  if (!line_) return;
  chart_->plotLayout()->remove(line_);
  chart_->plotLayout()->simplify();
}

int TitleRow::lines() const {
  return line_ ? static_cast<int>(line_->text().count(QLatin1Char('\n'))) + 1 : 0;
}

int TitleRow::width() const {
  if (!line_) return 0;
  const QFontMetrics metrics(line_->font());
  int widest = 0;
  for (const QString& l : line_->text().split(QLatin1Char('\n')))
    widest = std::max(widest, metrics.horizontalAdvance(l));
  return widest + 32;
}

// Draws a FigureTable: its lines above, the table, its notes below, each part's height known
// before the layout places it (the notes are wrapped to the width the figure is rendered at).
class TableRow::Element : public QCPLayoutElement {
 public:
  Element(QCustomPlot* chart, const FigureTable& table, int width, int point_size)
      : QCPLayoutElement(chart), table_(table), width_(width) {
    font_ = QFont(chart->font().family(), point_size);
    bold_ = font_;
    bold_.setBold(true);
    setMargins(QMargins(kMargin, 8, kMargin, 8));
    const QFontMetrics plain(font_), strong(bold_);
    columns_.assign(static_cast<std::size_t>(table_.header.size()), 0);
    auto widen = [&](const QStringList& cells, const QFontMetrics& m) {
      for (qsizetype c = 0; c < cells.size() && c < table_.header.size(); ++c)
        columns_[static_cast<std::size_t>(c)] =
            std::max(columns_[static_cast<std::size_t>(c)], m.horizontalAdvance(cells[c]) + kPad);
    };
    widen(table_.header, strong);
    for (const QStringList& row : table_.rows)
      widen(row, plain);
  }
  int tableWidth() const {
    int w = 0;
    for (int c : columns_)
      w += c;
    return w;
  }
  int textWidth() const { return std::max(tableWidth(), width_ - 2 * kMargin); }
  int rowHeight() const { return QFontMetrics(font_).height() + 6; }
  int wrappedHeight(const QString& text, const QFont& font) const {
    return QFontMetrics(font)
        .boundingRect(QRect(0, 0, textWidth(), 1 << 20), Qt::TextWordWrap, text)
        .height();
  }
  int contentHeight() const {
    int h = 0;
    for (const QString& line : table_.above)
      h += wrappedHeight(line, font_);
    if (!table_.warning.isEmpty()) h += wrappedHeight(table_.warning, bold_);
    if (!table_.header.isEmpty())
      h += kGap + rowHeight() * (1 + static_cast<int>(table_.rows.size())) + kGap;
    for (const QString& line : table_.below)
      h += wrappedHeight(line, font_);
    return h;
  }
  QSize minimumOuterSizeHint() const override {
    return {tableWidth() + 2 * kMargin, contentHeight() + 16};
  }
  QSize maximumOuterSizeHint() const override { return {QWIDGETSIZE_MAX, contentHeight() + 16}; }

 protected:
  void draw(QCPPainter* painter) override {
    const QRect area = rect();
    int y = area.top();
    auto wrapped = [&](const QString& text, const QFont& font, const QColor& colour) {
      painter->setFont(font);
      painter->setPen(colour);
      const int h = wrappedHeight(text, font);
      painter->drawText(QRect(area.left(), y, textWidth(), h), Qt::TextWordWrap, text);
      y += h;
    };
    for (const QString& line : table_.above)
      wrapped(line, font_, colours::kExportLabel);
    if (!table_.warning.isEmpty()) wrapped(table_.warning, bold_, colours::kWarningText);
    if (!table_.header.isEmpty()) {
      y += kGap;
      const int rh = rowHeight();
      auto cells = [&](const QStringList& row, const QFont& font) {
        painter->setFont(font);
        painter->setPen(colours::kExportLabel);
        int x = area.left();
        for (std::size_t c = 0; c < columns_.size(); ++c) {
          const int w = columns_[c];
          const QString text =
              static_cast<qsizetype>(c) < row.size() ? row[static_cast<qsizetype>(c)] : QString();
          // The metric left-aligned, the figures right-aligned (their units line up).
          const QRect cell =
              c == 0 ? QRect(x + 4, y, w - kPad / 2, rh) : QRect(x, y, w - kPad / 2, rh);
          painter->drawText(cell, Qt::AlignVCenter | (c == 0 ? Qt::AlignLeft : Qt::AlignRight),
                            text);
          x += w;
        }
        y += rh;
      };
      cells(table_.header, bold_);
      painter->setPen(QPen(colours::kExportRule, 1));
      painter->drawLine(QPoint(area.left(), y), QPoint(area.left() + tableWidth(), y));
      for (std::size_t r = 0; r < table_.rows.size(); ++r) {
        if (r % 2 == 1)
          painter->fillRect(QRect(area.left(), y, tableWidth(), rh), colours::kExportStripe);
        cells(table_.rows[r], font_);
      }
      y += kGap;
    }
    for (const QString& line : table_.below)
      wrapped(line, font_, colours::kExportNote);
  }

 private:
  static constexpr int kMargin = 16;  // left and right, as the charts' own
  static constexpr int kPad = 24;     // between two columns
  static constexpr int kGap = 6;      // above and below the table
  FigureTable table_;
  int width_;
  QFont font_, bold_;
  std::vector<int> columns_;  // each column's width
};

TableRow::TableRow(QCustomPlot* chart, const FigureTable& table, int width, int point_size)
    : chart_(chart) {
  element_ = new Element(chart, table, width, point_size);
  auto* layout = chart_->plotLayout();
  const int row = layout->rowCount();
  layout->insertRow(row);
  layout->addElement(row, 0, element_);
  layout->setRowStretchFactor(row, 0.001);  // its own height, the charts the rest
}

TableRow::~TableRow() {
  chart_->plotLayout()->remove(element_);
  chart_->plotLayout()->simplify();
}

int TableRow::height() const {
  return element_->minimumOuterSizeHint().height();
}

int TableRow::width() const {
  return element_->minimumOuterSizeHint().width();
}

bool exportPlot(QCustomPlot* plot, const QString& path, int width, int height, double scale,
                QString* error) {
  return exportRendered(path, error, [&](ExportFormat format, QByteArray* out, QString* why) {
    return renderPlot(plot, format, width, height, scale, out, why);
  });
}

bool exportTitledChart(QCustomPlot* chart, const QString& title, const QString& path, double scale,
                       QString* error, int min_width, int min_height) {
  return exportRendered(path, error, [&](ExportFormat format, QByteArray* out, QString* why) {
    bool ok = false;
    {
      const TitleRow row(chart, title, 9);
      const int extra = row.lines() > 0 ? 16 * row.lines() + 8 : 0;
      applyPlotTheme(chart, PlotTheme::Light);
      // Wide enough for the whole title: a title is never clipped.
      ok = renderPlot(chart, format, std::max({chart->width(), min_width, row.width()}),
                      std::max(chart->height(), min_height) + extra, scale, out, why);
    }
    applyPlotTheme(chart, PlotTheme::System);
    chart->replot(QCustomPlot::rpQueuedReplot);
    return ok;
  });
}

bool exportRunChart(QCustomPlot* chart, const LoadedRun* run, const QString& path, double scale,
                    QString* error) {
  return exportTitledChart(chart, run ? runTitle(*run, true) : QString(), path, scale, error);
}

bool exportWidget(QWidget* widget, const QString& path, double scale, QString* error) {
  return exportRendered(path, error, [&](ExportFormat format, QByteArray* out, QString* why) {
    return renderWidget(widget, format, scale, out, why);
  });
}

}  // namespace ddpscope::ui
