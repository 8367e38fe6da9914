#pragma once
// Writing a plot to PNG (with a scale factor), SVG or PDF, chosen by the file's extension.

#include <QString>
#include <optional>

class QCustomPlot;
class QWidget;

namespace ddpscope::ui {

enum class ExportFormat { Png, Svg, Pdf };
std::optional<ExportFormat> exportFormatFor(const QString& path);

// Renders `plot` at width x height logical pixels (PNG: times `scale` device pixels). Returns false
// with a message in *error when the format is unknown or the file cannot be written.
bool exportPlot(QCustomPlot* plot, const QString& path, int width, int height, double scale,
                QString* error);

// Renders a whole widget (a window, a panel) to PNG, SVG or PDF.
bool exportWidget(QWidget* widget, const QString& path, double scale, QString* error);

}  // namespace ddpscope::ui
