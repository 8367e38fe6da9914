#include "app/ui/palette.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QIcon>
#include <QPainter>
#include <QPalette>
#include <QStyle>
#include <QStyleFactory>
#include <algorithm>
#include <cmath>
#include <utility>

#include "app/analysis/report_json.h"
#include "app/ui/timeline_model.h"

namespace ddpscope::ui {

namespace {
const QString kEmptyNoteName = QStringLiteral("ddpscope-empty-note");

// Categorical colours for buckets that avoid the five role colours.
const QColor kBucketPalette[kBucketColours] = {QColor(0xE6, 0x9F, 0x00), QColor(0x56, 0xB4, 0xE9),
                                               QColor(0xCC, 0x79, 0xA7), QColor(0x33, 0x22, 0x88),
                                               QColor(0x88, 0x22, 0x55), QColor(0x8C, 0x6D, 0x31)};
}  // namespace

QColor bucketColour(std::int32_t id) {
  const int k = ((id % kBucketColours) + kBucketColours) % kBucketColours;
  return kBucketPalette[k];
}

QColor styleColour(std::uint16_t style) {
  switch (style) {
    case kStyleCompute:
      return colours::kCompute;
    case kStyleCommHidden:
      return colours::kCommHidden;
    case kStyleCommExposed:
      return colours::kCommExposed;
    case kStyleMemory:
      return colours::kMemory;
    case kStyleSync:
      return colours::kSync;
    case kStyleStep:
      return colours::kStep;
    case kStyleCutShort:
      return colours::kWarning;
    default:
      break;
  }
  const int k = (style - kStyleBucketBase) / 2;
  QColor c = kBucketPalette[std::clamp(k, 0, kBucketColours - 1)];
  if ((style - kStyleBucketBase) % 2 == 1) c.setAlpha(80);  // the wait before the allreduce
  return c;
}

QIcon warningIcon() {
  QPixmap pm(32, 32);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(Qt::NoPen);
  p.setBrush(colours::kWarning);
  p.drawEllipse(QRectF(1, 1, 30, 30));
  p.setBrush(textOn(colours::kWarning));
  p.drawRoundedRect(QRectF(13.5, 6, 5, 13), 2, 2);
  p.drawEllipse(QRectF(13.5, 21.5, 5, 5));
  p.end();
  return QIcon(pm);
}

QColor textOn(const QColor& fill) {
  const double y = 0.299 * fill.redF() + 0.587 * fill.greenF() + 0.114 * fill.blueF();
  return y > 0.6 || fill.alpha() < 128 ? QColor(0x1A, 0x1A, 0x1A) : QColor(Qt::white);
}

QString formatTime(trace::TimeNs ns) {
  return QString::fromStdString(analysis::formatDuration(ns));
}

QString formatPct(const std::optional<double>& pct, int decimals) {
  if (!pct) return QStringLiteral("n/a");
  return QString::number(*pct, 'f', decimals) + QStringLiteral(" %");
}

std::vector<std::pair<QString, QString>> bandwidthRows(std::int64_t bytes, trace::TimeNs dur,
                                                       bool collective, std::string_view name,
                                                       std::int32_t world_size) {
  std::vector<std::pair<QString, QString>> rows;
  if (bytes < 0 || dur <= 0) return rows;
  const double gbps = static_cast<double>(bytes) / static_cast<double>(dur);  // B/ns = GB/s
  if (!collective) {
    rows.emplace_back(QStringLiteral("bandwidth"), formatBandwidth(gbps));
    return rows;
  }
  rows.emplace_back(QStringLiteral("algbw"), formatBandwidth(gbps));
  const bool allreduce = analysis::isAllreduceName(name);
  if (const auto busbw = analysis::allreduceBusBandwidth(gbps, world_size); allreduce && busbw)
    rows.emplace_back(QStringLiteral("busbw"), formatBandwidth(busbw));
  return rows;
}

QString formatBytes(std::int64_t bytes) {
  if (bytes < 0) return QStringLiteral("–");
  if (bytes < 1024) return QString::number(bytes) + QStringLiteral(" B");
  // Binary units, as --bucket-mb; three significant digits, as times.
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return QString::number(v, 'f', decimals) + QLatin1Char(' ') + QLatin1String(kUnits[u]);
}

QString formatBandwidth(const std::optional<double>& gbps) {
  if (!gbps) return QStringLiteral("–");
  return QString::number(*gbps, 'f', *gbps >= 100 ? 0 : 1) + QStringLiteral(" GB/s");
}

QString sourceBadge(std::string_view source) {
  if (source == "sim") return QStringLiteral("SIMULATED");
  if (source == "cuda") return QStringLiteral("CUDA");
  if (source == "imported") return QStringLiteral("IMPORTED");
  return QStringLiteral("MIXED");
}

QColor badgeColour(std::string_view source) {
  if (source == "sim") return QColor(0xCC, 0x79, 0xA7);
  if (source == "cuda") return QColor(0x00, 0x72, 0xB2);
  return QColor(0x6B, 0x72, 0x80);
}

void applyPlotTheme(QCustomPlot* plot, PlotTheme theme) {
  QColor bg = Qt::white, fg(0x22, 0x22, 0x22), grid(0xE3, 0xE3, 0xE3);
  if (theme == PlotTheme::System) {
    const QPalette pal = QApplication::palette();
    bg = pal.color(QPalette::Base);
    fg = pal.color(QPalette::Text);
    grid = pal.color(QPalette::Mid);
    grid.setAlpha(70);
  }
  plot->setBackground(bg);
  for (QCPAxisRect* rect : plot->axisRects()) {
    rect->setBackground(bg);
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(fg, 1));
      axis->setTickPen(QPen(fg, 1));
      axis->setSubTickPen(QPen(fg, 1));
      axis->setTickLabelColor(fg);
      axis->setLabelColor(fg);
      axis->grid()->setPen(QPen(grid, 1, Qt::SolidLine));
      axis->grid()->setZeroLinePen(Qt::NoPen);
    }
  }
  for (int i = 0; i < plot->plotLayout()->elementCount(); ++i) {
    if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
      t->setTextColor(fg);
  }
  for (int i = 0; i < plot->itemCount(); ++i) {
    if (auto* t = qobject_cast<QCPItemText*>(plot->item(i));
        t && t->objectName() == kEmptyNoteName) {
      QColor c = fg;
      c.setAlpha(190);
      t->setColor(c);
    }
  }
  if (plot->legend) {
    plot->legend->setBrush(bg);
    plot->legend->setTextColor(fg);
    plot->legend->setBorderPen(Qt::NoPen);
  }
}

void putLegendBelow(QCustomPlot* plot) {
  auto* layout = plot->plotLayout();
  plot->axisRect()->insetLayout()->take(plot->legend);
  const int row = layout->rowCount();
  layout->addElement(row, 0, plot->legend);
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  plot->legend->setMargins(QMargins(4, 0, 4, 2));
  layout->setRowStretchFactor(row, 0.001);
}

namespace {

class IntegerTicker : public QCPAxisTicker {
 public:
  IntegerTicker(QCPAxis* axis, QString prefix, int label_px, std::int64_t last_key)
      : axis_(axis), prefix_(std::move(prefix)), label_px_(label_px), last_key_(last_key) {}

 protected:
  double getTickStep(const QCPRange& range) override {
    // The ticker belongs to the axis, so the axis outlives it.
    const int width = axis_->axisRect() ? axis_->axisRect()->width() : 0;
    const double labels = std::max(2.0, static_cast<double>(width > 0 ? width : 400) / label_px_);
    const double want = range.size() / labels;
    double magnitude = 1;
    while (magnitude * 10 <= want)
      magnitude *= 10;
    for (const double m : {1.0, 2.0, 5.0, 10.0})
      if (m * magnitude >= want) return m * magnitude;
    return 10 * magnitude;
  }
  int getSubTickCount(double) override { return 0; }
  // No label past the last key (a "b150" under 149 buckets).
  QVector<double> createTickVector(double step, const QCPRange& range) override {
    QVector<double> ticks = QCPAxisTicker::createTickVector(step, range);
    ticks.removeIf([&](double t) { return t > static_cast<double>(last_key_) + 0.5; });
    return ticks;
  }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    return prefix_ + QString::number(std::llround(tick));
  }

 private:
  QCPAxis* axis_;
  QString prefix_;
  int label_px_;
  std::int64_t last_key_;
};

QCPItemText* findEmptyNote(QCustomPlot* plot) {
  for (int i = 0; i < plot->itemCount(); ++i) {
    if (auto* t = qobject_cast<QCPItemText*>(plot->item(i)); t && t->objectName() == kEmptyNoteName)
      return t;
  }
  return nullptr;
}
}  // namespace

void setIntegerTicker(QCPAxis* axis, const QString& prefix, std::int64_t last_key) {
  const QFontMetrics fm(axis->tickLabelFont());
  const QString widest = prefix + QString::number(last_key);
  // The label plus room for a gap of about two characters.
  const int px = fm.horizontalAdvance(widest) + fm.horizontalAdvance(QLatin1Char('0')) + 6;
  axis->setTicker(QSharedPointer<IntegerTicker>::create(axis, prefix, std::max(px, 12), last_key));
  axis->setSubTicks(false);
}

void setCategoryRange(QCPAxis* axis, double first, double last, double bar) {
  const double margin = std::max(bar, 0.02 * (last - first));
  axis->setRange(first - margin, last + margin);
}

void showNoRun(QCustomPlot* chart) {
  setEmptyNote(chart, QObject::tr("No run loaded"), {chart->xAxis, chart->yAxis});
  chart->legend->setVisible(false);
  applyPlotTheme(chart, PlotTheme::System);
  chart->replot();
}

QString emptyNote(QCustomPlot* plot) {
  const QCPItemText* note = findEmptyNote(plot);
  return note ? note->text() : QString();
}

void setEmptyNote(QCustomPlot* plot, const QString& text, std::initializer_list<QCPAxis*> axes) {
  QCPItemText* note = findEmptyNote(plot);
  for (QCPAxis* axis : axes)
    axis->setTickLabels(text.isEmpty());
  if (text.isEmpty()) {
    if (note) plot->removeItem(note);
    return;
  }
  if (!note) {
    note = new QCPItemText(plot);
    note->setObjectName(kEmptyNoteName);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(0.5, 0.45);
    note->setPositionAlignment(Qt::AlignCenter);
    note->setTextAlignment(Qt::AlignCenter);
    note->setClipToAxisRect(false);
    note->setSelectable(false);
  }
  note->setText(text);
  QFont font = plot->font();
  font.setPointSizeF(font.pointSizeF() > 0 ? font.pointSizeF() + 1 : 10);
  note->setFont(font);
}

void applyAppTheme(const QString& theme) {
  if (theme == QLatin1String("system")) return;  // the window follows the system palette
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QPalette pal = QApplication::style()->standardPalette();
  if (theme == QLatin1String("dark")) {
    pal.setColor(QPalette::Window, QColor(0x2B, 0x2B, 0x2B));
    pal.setColor(QPalette::WindowText, QColor(0xE6, 0xE6, 0xE6));
    pal.setColor(QPalette::Base, QColor(0x1E, 0x1E, 0x1E));
    pal.setColor(QPalette::AlternateBase, QColor(0x2B, 0x2B, 0x2B));
    pal.setColor(QPalette::Text, QColor(0xE6, 0xE6, 0xE6));
    pal.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
    pal.setColor(QPalette::ButtonText, QColor(0xE6, 0xE6, 0xE6));
    pal.setColor(QPalette::Mid, QColor(0x60, 0x60, 0x60));
  }
  QApplication::setPalette(pal);
}

}  // namespace ddpscope::ui
