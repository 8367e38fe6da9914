#pragma once
// One palette everywhere (docs/UI.md "Visual language", Okabe–Ito) and the number formats.

#include <QColor>
#include <QString>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "tracer/format/trace_model.h"

class QCPAxis;
class QCustomPlot;
class QIcon;

namespace ddpscope::ui {

namespace colours {
inline const QColor kCompute{0x00, 0x72, 0xB2};      // blue
inline const QColor kCommHidden{0x00, 0x9E, 0x73};   // bluish green
inline const QColor kCommExposed{0xD5, 0x5E, 0x00};  // vermillion
inline const QColor kMemory{0x99, 0x99, 0x99};       // grey
inline const QColor kSync{0xF0, 0xE4, 0x42};         // yellow
inline const QColor kStep{0x6B, 0x72, 0x80};         // slate: neutral, not a data colour
inline const QColor kSelection{0x11, 0x11, 0x11};
// Okabe–Ito orange, with dark text: a warning about a run (the INCOMPLETE badge), not a role.
inline const QColor kWarning{0xE6, 0x9F, 0x00};
}  // namespace colours

// The badge of a run whose numbers do not cover the whole run (LoadedRun::incomplete()).
inline const QString kIncompleteBadge = QStringLiteral("INCOMPLETE");
// A small warning marker (orange disc with "!"), for list items.
QIcon warningIcon();

// The colour of a draw style (timeline_model.h Style).
QColor styleColour(std::uint16_t style);
// The colour of bucket `id` (solid).
QColor bucketColour(std::int32_t id);
// Dark or light text that reads on `fill`.
QColor textOn(const QColor& fill);

// Time in the unit that keeps three significant digits: "41.2 ms", "812 µs", "3.10 s".
QString formatTime(trace::TimeNs ns);
QString formatPct(const std::optional<double>& pct, int decimals = 2);
// Bytes in binary units, three significant digits: "512 B", "3.00 KiB", "27.0 MiB"; "–" when
// unknown (negative).
QString formatBytes(std::int64_t bytes);
QString formatBandwidth(const std::optional<double>& gbps);
// The bandwidth rows of an event moving `bytes` in `dur`, as (label, value): "bandwidth" for a
// copy; for a collective "algbw" (bytes / time) and, for an allreduce across 2 or more ranks,
// "busbw" (algbw · 2(p−1)/p, NCCL's bus bandwidth, as the Buckets table gives it).
std::vector<std::pair<QString, QString>> bandwidthRows(std::int64_t bytes, trace::TimeNs dur,
                                                       bool collective, std::string_view name,
                                                       std::int32_t world_size);
// "SIMULATED", "CUDA", "IMPORTED" or "MIXED" for a run's source string.
// The application's palette for a theme setting: "system" leaves the system's, "light" and
// "dark" set Fusion's with the theme's colours.
void applyAppTheme(const QString& theme);

QString sourceBadge(std::string_view source);
QColor badgeColour(std::string_view source);

enum class PlotTheme { System, Light };
// Colours a plot's axes, grid and background: the system palette, or white for export/slides.
void applyPlotTheme(QCustomPlot* plot, PlotTheme theme);
// Moves the plot's legend into a row of its own under everything else, laid out left to right,
// so that it never hides a bar or a point.
void putLegendBelow(QCustomPlot* plot);
// A ticker for a category axis of integer keys (steps, bucket ids): labels `prefix`N at integer
// steps of 1, 2, 5, 10, 20, ... chosen so that labels as wide as the last key's never collide at
// the axis's current width, on screen and in exports of any size; none past the last key.
void setIntegerTicker(QCPAxis* axis, const QString& prefix, std::int64_t last_key);
// The range that shows bars of width `bar` at keys first..last with a margin on both sides.
void setCategoryRange(QCPAxis* axis, double first, double last, double bar);

// Says in the middle of the plot why it is empty (no steps, no buckets, no GPU activity), and
// hides the numbers of `axes`, which would otherwise show a meaningless default range. An
// empty text removes the note and shows the numbers again.
void setEmptyNote(QCustomPlot* plot, const QString& text, std::initializer_list<QCPAxis*> axes);
// An empty chart of a panel with no run: the note "No run loaded", no legend, replotted.
void showNoRun(QCustomPlot* chart);
// The note setEmptyNote put on the plot; empty when there is none.
QString emptyNote(QCustomPlot* plot);

}  // namespace ddpscope::ui
