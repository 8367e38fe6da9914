#include "app/ui/breakdown_panel.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <functional>

#include "app/ui/format.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"
#include "app/ui/session.h"
#include "app/ui/timeline_view.h"

namespace ddpscope::ui {

namespace {

// Up to this many steps the x axis names every step (a label per bar).
constexpr std::size_t kLabelEveryStepUpTo = 40;

// One stacked series: its name, colour and value in a row (none: the row does not say it).
struct Series {
  QString name;
  QColor colour;
  std::function<std::optional<analysis::TimeNs>(const analysis::StepBreakdown&)> value;
};

bool everyRowHas(const std::vector<analysis::StepBreakdownRow>& rows,
                 std::optional<analysis::TimeNs> analysis::StepBreakdown::*part) {
  return !rows.empty() && std::all_of(rows.begin(), rows.end(), [part](const auto& r) {
    return (r.parts.*part).has_value();
  });
}

// The series of the rows, bottom to top: the exposed and idle parts split when every row has
// their split.
std::vector<Series> seriesFor(const std::vector<analysis::StepBreakdownRow>& rows) {
  using B = analysis::StepBreakdown;
  std::vector<Series> s;
  s.push_back({QObject::tr("compute"), colours::kCompute, [](const B& b) { return b.compute_ns; }});
  s.push_back({QObject::tr("hidden communication"), colours::kCommHidden,
               [](const B& b) { return b.hidden_comm_ns; }});
  if (everyRowHas(rows, &B::exposed_wait_ns)) {
    s.push_back({QObject::tr("exposed: waiting for a late rank"), colours::kCommWaiting,
                 [](const B& b) { return b.exposed_wait_ns; }});
    s.push_back({QObject::tr("exposed: transfer"), colours::kCommExposed,
                 [](const B& b) { return b.exposed_transfer_ns; }});
  } else {
    s.push_back({QObject::tr("exposed communication"), colours::kCommExposed,
                 [](const B& b) { return b.exposed_comm_ns; }});
  }
  s.push_back({QObject::tr("memory (copies, sets)"), colours::kMemory,
               [](const B& b) { return b.memory_ns; }});
  // Kernels of the other class (sync and wait kernels, rules of yours); cuda_sync records are
  // the host waiting and fall in the idle parts.
  s.push_back(
      {QObject::tr("other kernels"), colours::kSync, [](const B& b) { return b.other_ns; }});
  if (everyRowHas(rows, &B::idle_host_bound_ns)) {
    s.push_back({QObject::tr("idle: launch pending"), colours::kIdlePending,
                 [](const B& b) { return b.idle_launch_pending_ns; }});
    s.push_back({QObject::tr("idle: data loader"), colours::kHostDataLoader,
                 [](const B& b) { return b.idle_data_loader_ns; }});
    s.push_back({QObject::tr("idle: host-bound"), colours::kIdleHostBound,
                 [](const B& b) { return b.idle_host_bound_ns; }});
  } else {
    s.push_back(
        {QObject::tr("GPU idle"), colours::kIdleHostBound, [](const B& b) { return b.idle_ns; }});
  }
  return s;
}

}  // namespace

BreakdownPanel::BreakdownPanel(Session* session, TimelineView* timeline, QWidget* parent)
    : QWidget(parent),
      session_(session),
      timeline_(timeline),
      note_(new QLabel(this)),
      rank_(new QComboBox(this)),
      chart_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout;
  note_->setWordWrap(true);
  top->addWidget(note_, 1);
  top->addWidget(new QLabel(tr("Ranks:"), this));
  top->addWidget(rank_);
  layout->addLayout(top);
  layout->addWidget(chart_, 1);
  chart_->setMinimumHeight(180);
  addChartTitle(chart_, tr("Where each step's time went"));
  putLegendBelow(chart_);
  chart_->legend->setWrap(5);  // two rows: every name whole at the tab's usual width
  chart_->setMouseTracking(true);
  connect(chart_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    const int i = rowAt(e->position().toPoint());
    if (i < 0) {
      QToolTip::hideText();
      return;
    }
    QToolTip::showText(e->globalPosition().toPoint() + QPoint(12, 12), rowText(i), chart_);
  });
  connect(chart_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
    if (e->button() == Qt::LeftButton) activateRow(rowAt(e->position().toPoint()));
  });
  connect(rank_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
  connect(session_, &Session::currentRunChanged, this, [this] {
    refillRanks();
    refresh();
  });
  refillRanks();
  refresh();
}

QString BreakdownPanel::noteText() const {
  return note_->text();
}

void BreakdownPanel::refillRanks() {
  const QSignalBlocker block(rank_);
  rank_->clear();
  rank_->addItem(tr("mean over the ranks"), -1);
  if (const auto run = session_->current()) {
    for (std::size_t i = 0; i < run->report.ranks.size(); ++i)
      rank_->addItem(tr("rank %1").arg(run->report.ranks[i].rank), static_cast<int>(i));
  }
  rank_->setEnabled(rank_->count() > 2);
}

int BreakdownPanel::rankIndex() const {
  return rank_->currentIndex() < 0 ? -1 : rank_->currentData().toInt();
}

QStringList BreakdownPanel::seriesNames() const {
  QStringList names;
  for (const auto& s : seriesFor(rows_))
    names << s.name;
  return names;
}

void BreakdownPanel::refresh() {
  chart_->clearPlottables();
  rows_.clear();
  const auto run = session_->current();
  if (!run) {
    note_->clear();
    showNoRun(chart_);
    return;
  }
  const int rank = rankIndex();
  rows_ = analysis::stepBreakdownRows(run->report, rank);
  const bool outside =
      std::any_of(rows_.begin(), rows_.end(), [](const auto& r) { return r.parts.outside_ns > 0; });
  note_->setText(
      (rank < 0 ? tr("Each step's time split into parts, mean over the ranks that have the step")
                : tr("Each step's time split into parts, rank %1")
                      .arg(run->report.ranks[static_cast<std::size_t>(rank)].rank)) +
      tr(" · every step, warm-up included · hover a bar for its parts, click it to zoom the "
         "timeline to the step") +
      (outside ? tr(" · some steps' GPU work ran past their end: that part is in no bar")
               : QString()));
  QVector<double> keys;
  for (const auto& r : rows_)
    keys.push_back(r.step);
  QCPBars* below = nullptr;
  double top = 0;
  for (const auto& s : seriesFor(rows_)) {
    QVector<double> values;
    for (const auto& r : rows_)
      values.push_back(static_cast<double>(s.value(r.parts).value_or(0)) / 1e6);
    auto* bars = addBars(chart_, s.name, s.colour, keys, values);
    if (below) bars->moveAbove(below);
    below = bars;
  }
  for (const auto& r : rows_)
    top = std::max(top, static_cast<double>(r.step_ns) / 1e6);
  chart_->xAxis->setLabel(tr("step"));
  chart_->yAxis->setLabel(tr("ms"));
  showLegendBelow(chart_, !rows_.empty());
  setEmptyNote(chart_,
               rows_.empty() ? tr("No step markers (ProfilerStep#) in this run") : QString(),
               {chart_->xAxis, chart_->yAxis});
  if (!rows_.empty()) {
    // Every bar names its step while the labels fit side by side (a few dozen steps); past
    // that, a label every so many steps.
    if (rows_.size() <= kLabelEveryStepUpTo) {
      auto labels = QSharedPointer<QCPAxisTickerText>::create();
      for (const auto& r : rows_)
        labels->addTick(static_cast<double>(r.step), QString::number(r.step));
      chart_->xAxis->setTicker(labels);
      chart_->xAxis->setSubTicks(false);
    } else {
      setIntegerTicker(chart_->xAxis, QString(), rows_.back().step);
    }
    setCategoryRange(chart_->xAxis, keys.front(), keys.back(), kBarWidth);
    chart_->yAxis->setRange(0, top * 1.08);
  }
  applyPlotTheme(chart_, PlotTheme::System);
  chart_->replot();
}

int BreakdownPanel::rowAt(const QPoint& pos) const {
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    if (onBar(chart_, pos, rows_[i].step, static_cast<double>(rows_[i].step_ns) / 1e6))
      return static_cast<int>(i);
  }
  return -1;
}

QString BreakdownPanel::rowText(int i) const {
  if (i < 0 || i >= static_cast<int>(rows_.size())) return {};
  const auto& r = rows_[static_cast<std::size_t>(i)];
  QString text = tr("step %1 · %2").arg(r.step).arg(formatTime(r.step_ns));
  if (rankIndex() < 0) text += tr(" (mean of %n rank(s))", nullptr, r.ranks);
  const auto series = seriesFor(rows_);
  for (auto it = series.rbegin(); it != series.rend(); ++it)  // top of the bar first
    text += QStringLiteral("\n%1: %2").arg(it->name, formatTime(it->value(r.parts).value_or(0)));
  if (r.parts.outside_ns > 0)
    text += tr("\nGPU work of the step past its end (in no part): %1")
                .arg(formatTime(r.parts.outside_ns));
  return text;
}

bool BreakdownPanel::activateRow(int i) {
  if (i < 0 || i >= static_cast<int>(rows_.size())) return false;
  return timeline_->goToStep(rows_[static_cast<std::size_t>(i)].step, rankIndex());
}

bool BreakdownPanel::exportChart(const QString& path, double scale, QString* error) {
  return exportRunChart(chart_, session_->current().get(), path, scale, error);
}

}  // namespace ddpscope::ui
