#include "app/ui/plot_export.h"

#include <qcustomplot.h>
#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

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

bool writable(const QString& path, QString* error) {
  const QFileInfo dir(QFileInfo(path).absolutePath());
  if (!dir.isDir())
    return fail(
        error,
        QStringLiteral("cannot write %1: folder %2 does not exist").arg(path, dir.filePath()));
  if (!dir.isWritable())
    return fail(error, QStringLiteral("cannot write %1: folder is not writable").arg(path));
  return true;
}
}  // namespace

bool exportPlot(QCustomPlot* plot, const QString& path, int width, int height, double scale,
                QString* error) {
  const auto format = exportFormatFor(path);
  if (!format)
    return fail(
        error, QStringLiteral("cannot export to %1: use a .png, .svg or .pdf file name").arg(path));
  if (!writable(path, error)) return false;
  if (width <= 0 || height <= 0) return fail(error, QStringLiteral("cannot export an empty plot"));
  bool ok = false;
  switch (*format) {
    case ExportFormat::Png:
      ok = plot->savePng(path, width, height, scale);
      break;
    case ExportFormat::Pdf:
      ok = plot->savePdf(path, width, height, QCP::epNoCosmetic, "ddpscope");
      break;
    case ExportFormat::Svg: {
      QSvgGenerator svg;
      svg.setFileName(path);
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
  }
  if (!ok || !QFileInfo(path).exists())
    return fail(error, QStringLiteral("cannot write %1").arg(path));
  return true;
}

bool exportWidget(QWidget* widget, const QString& path, double scale, QString* error) {
  const auto format = exportFormatFor(path);
  if (!format)
    return fail(
        error, QStringLiteral("cannot export to %1: use a .png, .svg or .pdf file name").arg(path));
  if (!writable(path, error)) return false;
  const QSize size = widget->size();
  bool ok = false;
  switch (*format) {
    case ExportFormat::Png: {
      QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
      image.setDevicePixelRatio(scale);
      image.fill(Qt::white);
      widget->render(&image);
      ok = image.save(path);
      break;
    }
    case ExportFormat::Svg: {
      QSvgGenerator svg;
      svg.setFileName(path);
      svg.setSize(size);
      svg.setViewBox(QRect(QPoint(0, 0), size));
      QPainter painter(&svg);
      widget->render(&painter);
      ok = painter.end();
      break;
    }
    case ExportFormat::Pdf: {
      QPdfWriter pdf(path);
      pdf.setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
      pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
      pdf.setResolution(72);
      QPainter painter(&pdf);
      widget->render(&painter);
      ok = painter.end();
      break;
    }
  }
  if (!ok) return fail(error, QStringLiteral("cannot write %1").arg(path));
  return true;
}

}  // namespace ddpscope::ui
