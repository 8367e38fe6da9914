#include "app/ui/plot_export.h"

#include "tracer/format/file_io.h"

#include <qcustomplot.h>
#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QSvgGenerator>
#include <QWidget>
#include <cerrno>
#include <cstring>

#include "app/ui/palette.h"

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
      image.fill(Qt::white);
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

bool exportPlot(QCustomPlot* plot, const QString& path, int width, int height, double scale,
                QString* error) {
  const auto format = checkExportPath(path, error);
  if (!format) return false;
  QByteArray bytes;
  return renderPlot(plot, *format, width, height, scale, &bytes, error) &&
         writeFileAtomically(path, bytes, error);
}

bool exportTitledChart(QCustomPlot* chart, const QString& title, const QString& path, double scale,
                       QString* error, int min_width, int min_height) {
  const auto format = checkExportPath(path, error);
  if (!format) return false;
  QCPTextElement* line = nullptr;
  int extra = 0;
  if (!title.isEmpty()) {
    line = new QCPTextElement(chart, title, QFont(chart->font().family(), 9, QFont::Bold));
    chart->plotLayout()->insertRow(0);
    chart->plotLayout()->addElement(0, 0, line);
    extra = 16 * static_cast<int>(title.count(QLatin1Char('\n')) + 1) + 8;
  }
  applyPlotTheme(chart, PlotTheme::Light);
  QByteArray bytes;
  const bool ok = renderPlot(chart, *format, std::max(chart->width(), min_width),
                             std::max(chart->height(), min_height) + extra, scale, &bytes, error);
  if (line) {
    chart->plotLayout()->remove(line);
    chart->plotLayout()->simplify();
  }
  applyPlotTheme(chart, PlotTheme::System);
  chart->replot(QCustomPlot::rpQueuedReplot);
  return ok && writeFileAtomically(path, bytes, error);
}

bool exportWidget(QWidget* widget, const QString& path, double scale, QString* error) {
  const auto format = checkExportPath(path, error);
  if (!format) return false;
  QByteArray bytes;
  return renderWidget(widget, *format, scale, &bytes, error) &&
         writeFileAtomically(path, bytes, error);
}

}  // namespace ddpscope::ui
