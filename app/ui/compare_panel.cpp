#include "app/ui/compare_panel.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "app/analysis/bucket_steps.h"
#include "app/analysis/digest_reader.h"
#include "app/ui/compare_model.h"
#include "app/ui/format.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/plot_style.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

namespace {
// The height, in the lanes' units (pixels), of each side's line saying it has no lanes.
constexpr double kNoLanesHeight = 24;

// Time labels relative to the aligned step's start (ticks at start + k * step).
class AlignedTimeTicker : public TimeTicker {
 public:
  explicit AlignedTimeTicker(double origin) { setTickOrigin(origin); }

 protected:
  double getTickStep(const QCPRange& range) override {
    step_ = TimeTicker::getTickStep(range);
    magnitude_ =
        std::max(std::fabs(range.lower - tickOrigin()), std::fabs(range.upper - tickOrigin()));
    return step_;
  }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    return formatTick(tick - tickOrigin(), step_, magnitude_);
  }

 private:
  double step_ = 1;
  double magnitude_ = 0;
};

// Rank 0's step `n`, or nullptr.
const analysis::StepReport* findStep(const LoadedRun& run, int n) {
  if (run.report.ranks.empty()) return nullptr;
  for (const auto& s : run.report.ranks.front().steps)
    if (s.step == n) return &s;
  return nullptr;
}

QCPAxis* keyAxis(QCPAxisRect* rect) {
  return rect->axis(QCPAxis::atBottom);
}
}  // namespace

ComparePanel::ComparePanel(Session* session, QWidget* parent) : QWidget(parent), session_(session) {
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(buildPickers());
  warning_ = new QLabel(this);
  warning_->setWordWrap(true);
  warning_->setStyleSheet(
      QStringLiteral("QLabel{color:%1; font-weight:bold;}").arg(colours::kWarningText.name()));
  warning_->setVisible(false);
  layout->addWidget(warning_);

  plot_ = new QCustomPlot(this);
  plot_->setMinimumHeight(200);
  step_note_ = new QLabel(this);
  step_note_->setWordWrap(true);
  step_note_->setStyleSheet(QStringLiteral("QLabel{color:%1;}").arg(colours::kLabelGrey.name()));
  layout->addWidget(step_note_);
  model_ = new CompareModel(this);
  table_ = new QTableView(this);
  table_->setModel(model_);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setMinimumWidth(380);
  // The lanes keep their height; a short tab scrolls instead of squeezing them.
  auto* scroll = new QScrollArea(this);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(plot_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(scroll);
  split->addWidget(table_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setSizes({900, 420});
  layout->addWidget(split, 1);
  setUpPlot();

  auto pick = [this] { setRuns(box_a_->currentIndex(), box_b_->currentIndex()); };
  connect(box_a_, &QComboBox::currentIndexChanged, this, pick);
  connect(box_b_, &QComboBox::currentIndexChanged, this, pick);
  connect(step_box_, &QComboBox::currentIndexChanged, this, &ComparePanel::rebuild);
  // A run analysed again (new rules) stays where the user put it, as A or B.
  connect(session_, &Session::runReplaced, this,
          [this](const std::shared_ptr<const LoadedRun>& old,
                 const std::shared_ptr<const LoadedRun>& now) {
            if (a_ == old) a_ = now;
            if (b_ == old) b_ = now;
          });
  connect(session_, &Session::runsChanged, this, &ComparePanel::refreshRunLists);
  refreshRunLists();
}

QHBoxLayout* ComparePanel::buildPickers() {
  auto* row = new QHBoxLayout;
  box_a_ = new QComboBox(this);
  box_b_ = new QComboBox(this);
  step_box_ = new QComboBox(this);
  box_a_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  box_b_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  row->addWidget(new QLabel(tr("A:"), this));
  row->addWidget(box_a_);
  row->addWidget(new QLabel(tr("B:"), this));
  row->addWidget(box_b_);
  row->addWidget(new QLabel(tr("aligned at the start of"), this));
  row->addWidget(step_box_);
  row->addStretch(1);
  return row;
}

void ComparePanel::setUpPlot() {
  // Layout: title A, lanes of A, title B, lanes of B; B's time axis follows A's; the legend of
  // both runs' colours under them once runs are shown (showAligned).
  plot_->legend->setVisible(false);
  plot_->legend->setIconSize(14, 10);
  QCPAxisRect* rect_a = plot_->axisRect();
  auto* rect_b = new QCPAxisRect(plot_);
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->addElement(0, 0, new QCPTextElement(plot_, QString()));
  plot_->plotLayout()->addElement(2, 0, new QCPTextElement(plot_, QString()));
  plot_->plotLayout()->addElement(3, 0, rect_b);
  auto* margins = new QCPMarginGroup(plot_);
  for (QCPAxisRect* rect : {rect_a, rect_b}) {
    rect->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
    rect->axis(QCPAxis::atLeft)->setRangeReversed(true);
    rect->axis(QCPAxis::atLeft)->grid()->setVisible(false);
    rect->setRangeDrag(Qt::Horizontal);
    rect->setRangeZoom(Qt::Horizontal);
    rect->setRangeDragAxes(keyAxis(rect), nullptr);
    rect->setRangeZoomAxes(keyAxis(rect), nullptr);
  }
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  auto sync = [this](QCPAxisRect* from, QCPAxisRect* to, const QCPRange& r) {
    if (syncing_) return;
    syncing_ = true;
    const double shift =
        keyAxis(to)->ticker()->tickOrigin() - keyAxis(from)->ticker()->tickOrigin();
    keyAxis(to)->setRange(r.lower + shift, r.upper + shift);
    syncing_ = false;
    plot_->replot(QCustomPlot::rpQueuedReplot);
  };
  connect(keyAxis(rect_a), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          [=](const QCPRange& r) { sync(rect_a, rect_b, r); });
  connect(keyAxis(rect_b), qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this,
          [=](const QCPRange& r) { sync(rect_b, rect_a, r); });
  applyPlotTheme(plot_, PlotTheme::System);
}

void ComparePanel::refreshRunLists() {
  const auto& runs = session_->runs();
  const int n = static_cast<int>(runs.size());
  auto indexOf = [&](const std::shared_ptr<const LoadedRun>& r, const DigestEntry& d) {
    for (std::size_t i = 0; r && i < runs.size(); ++i)
      if (runs[i] == r) return static_cast<int>(i);
    for (std::size_t k = 0; d.digest && k < digests_.size(); ++k)
      if (digests_[k].digest == d.digest) return n + static_cast<int>(k);
    return -1;
  };
  int a = indexOf(a_, da_), b = indexOf(b_, db_);
  // Default: the two most recent runs (the one just made against the one before).
  if (a < 0 || b < 0 || a == b) {
    a = std::max(0, n - 2);
    b = n - 1;
  }
  for (QComboBox* box : {box_a_, box_b_}) {
    QSignalBlocker block(box);
    box->clear();
    for (const auto& r : runs)
      box->addItem(QStringLiteral("%1 [%2]").arg(r->name, sourceBadge(r->source())));
    for (const auto& d : digests_)
      box->addItem(tr("%1 [digest]").arg(d.name));
  }
  setRuns(a, b);
}

void ComparePanel::addDigest(std::shared_ptr<const analysis::Digest> digest, const QString& name,
                             const QString& key) {
  if (!digest) return;
  const auto same = std::find_if(digests_.begin(), digests_.end(),
                                 [&](const DigestEntry& d) { return d.key == key; });
  if (same != digests_.end()) {
    // Opened again (perhaps rewritten): the new one, where the old one was picked too.
    for (DigestEntry* side : {&da_, &db_})
      if (side->digest == same->digest) side->digest = digest;
    same->digest = std::move(digest);
  } else {
    digests_.push_back({std::move(digest), name, key});
  }
  refreshRunLists();
}

int ComparePanel::digestIndex(const QString& key) const {
  for (std::size_t k = 0; k < digests_.size(); ++k)
    if (digests_[k].key == key) return static_cast<int>(session_->runs().size() + k);
  return -1;
}

void ComparePanel::setRuns(int a, int b) {
  {
    QSignalBlocker block_a(box_a_), block_b(box_b_);
    box_a_->setCurrentIndex(a);
    box_b_->setCurrentIndex(b);
  }
  const auto& runs = session_->runs();
  const int n = static_cast<int>(runs.size());
  auto at = [&](int i) -> std::shared_ptr<const LoadedRun> {
    return i >= 0 && i < n ? runs[static_cast<std::size_t>(i)] : nullptr;
  };
  auto digestAt = [&](int i) -> DigestEntry {
    return i >= n && i - n < static_cast<int>(digests_.size())
               ? digests_[static_cast<std::size_t>(i - n)]
               : DigestEntry{};
  };
  a_ = at(a);
  b_ = at(b);
  da_ = digestAt(a);
  db_ = digestAt(b);
  refreshSteps();
  rebuild();
}

void ComparePanel::refreshSteps() {
  const int keep = step();
  QSignalBlocker block(step_box_);
  step_box_->clear();
  if (!a_ || !b_ || a_->report.ranks.empty()) return;
  std::vector<int> common;
  for (const auto& s : a_->report.ranks.front().steps)
    if (findStep(*b_, s.step)) common.push_back(s.step);
  for (int n : common)
    step_box_->addItem(tr("step %1").arg(n), n);
  // Default: the first step of A's selection that B has too (the steps A's figures cover: no
  // warm-up step), else the first step they share.
  int index = step_box_->findData(keep);
  for (std::size_t i = 0; index < 0 && i < common.size(); ++i)
    if (analysis::inSelection(a_->summary.selection, common[i]) &&
        !a_->summary.selection.whole_trace)
      index = static_cast<int>(i);
  if (index < 0) index = 0;
  step_box_->setCurrentIndex(common.empty() ? -1 : index);
}

void ComparePanel::setStep(int n) {
  const int index = step_box_->findData(n);
  if (index >= 0) step_box_->setCurrentIndex(index);
}

int ComparePanel::step() const {
  return step_box_->currentIndex() >= 0 ? step_box_->currentData().toInt() : -1;
}

trace::TimeNs ComparePanel::stepStart(bool b) const {
  const auto& run = b ? b_ : a_;
  const analysis::StepReport* s = run ? findStep(*run, step()) : nullptr;
  return s ? s->start_ns : -1;
}

void ComparePanel::buildRect(QCPAxisRect* rect, const LoadedRun& run, trace::TimeNs origin) {
  keyAxis(rect)->setTicks(true);  // hidden while a digest was shown (showWithDigest)
  keyAxis(rect)->setTickLabels(true);
  keyAxis(rect)->grid()->setVisible(true);
  keyAxis(rect)->setVisible(true);
  rect->axis(QCPAxis::atLeft)->setVisible(true);
  auto labels = QSharedPointer<QCPAxisTickerText>::create();
  double y = 0;
  if (!run.run.ranks.empty()) {
    const auto& rank = run.run.ranks.front();
    for (const Lane& lane : run.timeline.lanes) {
      if (lane.rank_index != 0) continue;
      new LanePlottable(keyAxis(rect), rect->axis(QCPAxis::atLeft), &lane, &rank, y);
      if (!lane.label.empty())
        labels->addTick(y + lane.height / 2.0, QString::fromStdString(lane.label));
      y += lane.height;
    }
  }
  rect->axis(QCPAxis::atLeft)->setTicker(labels);
  rect->axis(QCPAxis::atLeft)->setRange(0, std::max(1.0, y));
  keyAxis(rect)->setTicker(QSharedPointer<AlignedTimeTicker>::create(static_cast<double>(origin)));
  // The aligned step's start.
  auto* line = new QCPItemStraightLine(plot_);
  line->setClipAxisRect(rect);
  line->point1->setAxes(keyAxis(rect), rect->axis(QCPAxis::atLeft));
  line->point2->setAxes(keyAxis(rect), rect->axis(QCPAxis::atLeft));
  line->point1->setCoords(static_cast<double>(origin), 0);
  line->point2->setCoords(static_cast<double>(origin), 1);
  line->setPen(QPen(colours::kSelection, 1, Qt::DashLine));
  plot_->plotLayout()->setRowStretchFactor(rect == plot_->axisRect(0) ? 1 : 3, std::max(1.0, y));
}

void ComparePanel::rebuild() {
  plot_->clearPlottables();
  plot_->clearItems();
  rows_.clear();
  warning_->setVisible(false);
  model_->setRows({});
  step_note_->clear();
  auto* title_a = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(0, 0));
  auto* title_b = qobject_cast<QCPTextElement*>(plot_->plotLayout()->element(2, 0));
  const auto* sa = a_ ? findStep(*a_, step()) : nullptr;
  const auto* sb = b_ ? findStep(*b_, step()) : nullptr;
  for (int i = 0; i < 2; ++i)  // no lane labels left from the runs shown before
    plot_->axisRect(i)
        ->axis(QCPAxis::atLeft)
        ->setTicker(QSharedPointer<QCPAxisTickerText>::create());
  if ((a_ || da_.digest) && (b_ || db_.digest) && (da_.digest || db_.digest)) {
    showWithDigest(title_a, title_b);
    return;
  }
  if (!a_ || !b_) {
    title_a->setText(tr("Open or run two runs to compare them"));
    title_b->setText(QString());
    plot_->legend->clearItems();
    showLegendBelow(plot_, false);
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  if (!sa || !sb) {
    // No step in common (a run without steps, or other step numbers): the figures still compare,
    // and the lanes are aligned at each run's first GPU activity.
    auto title = [this](const QString& tag, const LoadedRun& run) {
      return tr("%1: %2 [%3] · from its first GPU activity")
          .arg(tag, run.name, sourceBadge(run.source()));
    };
    title_a->setText(title(QStringLiteral("A"), *a_));
    title_b->setText(title(QStringLiteral("B"), *b_));
    // Rank 0's first GPU activity (its stream lanes', the ones shown).
    const auto firstGpu = [](const LoadedRun& run) {
      trace::TimeNs t = std::numeric_limits<trace::TimeNs>::max();
      for (const Lane& l : run.timeline.lanes)
        if (l.kind == LaneKind::Stream && l.rank_index == 0 && l.events.size() > 0)
          t = std::min(t, l.events.start(0));
      return t == std::numeric_limits<trace::TimeNs>::max() ? run.timeline.extent_lo : t;
    };
    const trace::TimeNs oa = firstGpu(*a_), ob = firstGpu(*b_);
    showAligned(oa, ob, std::max(a_->timeline.extent_hi - oa, b_->timeline.extent_hi - ob),
                tr("time since the first GPU activity"));
    fillTable();
    step_note_->setText(
        tr("The two runs have no step in common: lanes aligned at each run's first GPU activity. "
           "The table compares each run's figures over the steps it covers: for A %1, for B "
           "%2.")
            .arg(QString::fromStdString(a_->summary.selection.rule),
                 QString::fromStdString(b_->summary.selection.rule)));
    return;
  }
  auto title = [this](const QString& tag, const LoadedRun& run, const analysis::StepReport& s) {
    // The first rank loaded (rank 0 when it is): its lanes are the ones drawn.
    const std::int32_t rank = run.report.ranks.empty() ? 0 : run.report.ranks.front().rank;
    return tr("%1: %2 [%3] · rank %4, step %5: %6 · overlap %7 · exposed %8")
        .arg(tag, run.name, sourceBadge(run.source()))
        .arg(rank)
        .arg(s.step)
        .arg(formatTime(s.dur_ns), formatPct(s.metrics.overlap_pct, 1),
             formatTime(s.metrics.exposed_ns));
  };
  title_a->setText(title(QStringLiteral("A"), *a_, *sa));
  title_b->setText(title(QStringLiteral("B"), *b_, *sb));
  showAligned(sa->start_ns, sb->start_ns, std::max(sa->dur_ns, sb->dur_ns),
              tr("time since the step's start"));
  fillTable();
  const auto covered = [this](const LoadedRun& run) {
    return analysis::inSelection(run.summary.selection, step()) &&
                   !run.summary.selection.whole_trace
               ? tr("one of the steps its figures cover")
               : tr("not one of the steps its figures cover");
  };
  step_note_->setText(
      tr("Lanes aligned at the start of step %1: for A %2 (%3), for B %4 (%5). The table "
         "compares each run's figures over the steps it covers (its first row).")
          .arg(step())
          .arg(covered(*a_), QString::fromStdString(a_->summary.selection.rule), covered(*b_),
               QString::fromStdString(b_->summary.selection.rule)));
}

void ComparePanel::showWithDigest(QCPTextElement* title_a, QCPTextElement* title_b) {
  const auto title = [this](const QString& tag, bool b) {
    const auto& run = b ? b_ : a_;
    return run ? tr("%1: %2 [%3]").arg(tag, run->name, sourceBadge(run->source()))
               : tr("%1: %2 [digest] · figures from its digest").arg(tag, sideName(b));
  };
  title_a->setText(title(QStringLiteral("A"), false));
  title_b->setText(title(QStringLiteral("B"), true));
  for (int i = 0; i < 2; ++i) {
    // No time axis: a line of text where the lanes would be (kNoLanesHeight high, which the
    // export's height counts as it counts lanes).
    QCPAxisRect* rect = plot_->axisRect(i);
    rect->axis(QCPAxis::atLeft)->setRange(0, kNoLanesHeight);
    keyAxis(rect)->setTicker(QSharedPointer<TimeTicker>::create());
    keyAxis(rect)->setLabel(QString());
    keyAxis(rect)->setTicks(false);
    keyAxis(rect)->setTickLabels(false);
    keyAxis(rect)->grid()->setVisible(false);
    // No axis lines either: an open box read as lanes cut off.
    keyAxis(rect)->setVisible(false);
    rect->axis(QCPAxis::atLeft)->setVisible(false);
    plot_->plotLayout()->setRowStretchFactor(i == 0 ? 1 : 3, 1);
    const bool digest = i == 0 ? da_.digest != nullptr : db_.digest != nullptr;
    auto* text = new QCPItemText(plot_);
    text->setClipAxisRect(rect);
    text->position->setType(QCPItemPosition::ptAxisRectRatio);
    text->position->setAxisRect(rect);
    text->position->setCoords(0.5, 0.5);
    text->setText(digest ? tr("a run digest: no lanes")
                         : tr("lanes not drawn beside a digest (the Timeline tab has them)"));
    text->setColor(colours::kLabelGrey);
  }
  plot_->legend->clearItems();
  showLegendBelow(plot_, false);
  plot_->setMinimumHeight(200);
  // The table: each side's summary as its traces or its digest give it (one definition of the
  // rows); the warning and the note as for two runs.
  const auto measured = [this](bool b) {
    const auto& run = b ? b_ : a_;
    const QString tag = b ? QStringLiteral("B") : QStringLiteral("A");
    if (run)
      return analysis::measuredRun({&run->run, &run->report, &run->summary, tag.toStdString()}, 0);
    return analysis::measuredDigest(*(b ? db_ : da_).digest, tag.toStdString(), 0);
  };
  const std::vector<analysis::MeasuredRun> pair{measured(false), measured(true)};
  rows_ = analysis::compareSummaries(pair[0].summary, pair[1].summary);
  model_->setRows(rows_);
  const QString warning = QString::fromStdString(analysis::likeForLikeWarning(
      pair, analysis::comparedVaried(pair[0].summary, pair[1].summary)));
  warning_->setText(warning);
  warning_->setVisible(!warning.isEmpty());
  QString note =
      tr("%1. The table compares each run's figures over the steps it covers: for A %2, for B "
         "%3.")
          .arg(da_.digest && db_.digest
                   ? tr("No lanes: A and B are read from their digests")
                   : tr("No lanes: %1 is read from its digest").arg(da_.digest ? "A" : "B"),
               QString::fromStdString(pair[0].summary.selection.rule),
               QString::fromStdString(pair[1].summary.selection.rule));
  if (const auto not_compared = analysis::settingsNotComparedNote(pair); !not_compared.empty())
    note += QStringLiteral(" ") + QString::fromStdString(not_compared);
  step_note_->setText(note);
  applyPlotTheme(plot_, PlotTheme::System);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool ComparePanel::twoSides() const {
  if (!(a_ || da_.digest) || !(b_ || db_.digest)) return false;
  return a_ ? a_ != b_ : da_.digest != db_.digest;
}

QString ComparePanel::sideName(bool b) const {
  const auto& run = b ? b_ : a_;
  return run ? run->name : (b ? db_ : da_).name;
}

std::string ComparePanel::configurationOf(bool b) const {
  const auto& run = b ? b_ : a_;
  if (run) return analysis::runConfigurationText(run->run);
  const auto& d = (b ? db_ : da_).digest;
  return d ? analysis::digestConfigurationText(*d) : std::string();
}

QString ComparePanel::stepNote() const {
  return step_note_->text();
}

void ComparePanel::showAligned(trace::TimeNs origin_a, trace::TimeNs origin_b,
                               trace::TimeNs length_ns, const QString& axis_label) {
  QCPAxisRect* rect_a = plot_->axisRect(0);
  QCPAxisRect* rect_b = plot_->axisRect(1);
  buildRect(rect_a, *a_, origin_a);
  buildRect(rect_b, *b_, origin_b);
  // Both in full, from just before their origin.
  const double length = static_cast<double>(std::max<trace::TimeNs>(length_ns, 1));
  syncing_ = true;
  keyAxis(rect_b)->setRange(static_cast<double>(origin_b) - 0.03 * length,
                            static_cast<double>(origin_b) + 1.05 * length);
  syncing_ = false;
  keyAxis(rect_a)->setRange(static_cast<double>(origin_a) - 0.03 * length,
                            static_cast<double>(origin_a) + 1.05 * length);
  // What the colours mean, in either run (the timeline's legend, one definition).
  fillLaneLegend(plot_->legend, {&a_->timeline, &b_->timeline});
  showLegendBelow(plot_, plot_->legend->itemCount() > 0);
  // Room for every lane at its height, the titles, the time axes and the legend.
  const double lanes =
      rect_a->axis(QCPAxis::atLeft)->range().size() + rect_b->axis(QCPAxis::atLeft)->range().size();
  plot_->setMinimumHeight(static_cast<int>(lanes) + 170 + legendHeight());
  keyAxis(rect_a)->setLabel(axis_label);
  keyAxis(rect_b)->setLabel(axis_label);
  applyPlotTheme(plot_, PlotTheme::System);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void ComparePanel::fillTable() {
  rows_ = analysis::compareRuns(a_->report, b_->report);
  const QString warning = QString::fromStdString(analysis::likeForLikeWarning(
      {analysis::measuredRun({&a_->run, &a_->report, &a_->summary, "A"}, 0),
       analysis::measuredRun({&b_->run, &b_->report, &b_->summary, "B"}, 0)},
      analysis::comparedVaried(a_->summary, b_->summary)));
  warning_->setText(warning);
  warning_->setVisible(!warning.isEmpty());
  model_->setRows(rows_);
}

QString ComparePanel::warningText() const {
  return warning_->isVisibleTo(this) ? warning_->text() : QString();
}

bool ComparePanel::exportChart(const QString& path, double scale, QString* error) {
  return exportRendered(path, error, [&](ExportFormat format, QByteArray* out, QString* why) {
    return renderChart(format, scale, out, why);
  });
}

QStringList ComparePanel::legendTexts() const {
  QStringList out;
  if (!plot_->legend->visible()) return out;
  for (int i = 0; i < plot_->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<SwatchLegendItem*>(plot_->legend->item(i))) out << item->text();
  return out;
}

int ComparePanel::legendHeight() const {
  return plot_->legend->visible() ? plot_->legend->minimumOuterSizeHint().height() : 0;
}

FigureTable ComparePanel::figureTable() const {
  FigureTable table;
  if (!(a_ || da_.digest) || !(b_ || db_.digest)) return table;
  table.above
      << tr("A: %1 — %2").arg(sideName(false), QString::fromStdString(configurationOf(false)))
      << tr("B: %1 — %2").arg(sideName(true), QString::fromStdString(configurationOf(true)));
  table.warning = warningText();
  for (int c = 0; c < model_->columnCount(); ++c)
    table.header << model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
  for (const auto& r : rows_)
    table.rows.push_back({QString::fromStdString(r.metric), QString::fromStdString(r.a),
                          QString::fromStdString(r.b), QString::fromStdString(r.delta)});
  table.below << stepNote();
  return table;
}

bool ComparePanel::renderChart(ExportFormat format, double scale, QByteArray* out, QString* error) {
  applyPlotTheme(plot_, PlotTheme::Light);
  double lanes = 0;
  for (int i = 0; i < 2; ++i)
    lanes += plot_->axisRect(i)->axis(QCPAxis::atLeft)->range().size();
  bool ok = false;
  {
    // The figures under the lanes, as the tab shows them: a slide of this chart says by how much
    // B differs from A, and over which steps.
    const int width = std::max(plot_->width(), 1200);
    const TableRow table(plot_, figureTable(), width);
    ok = renderPlot(plot_, format, std::max(width, table.width()),
                    static_cast<int>(lanes) + 200 + legendHeight() + table.height(), scale, out,
                    error);
  }
  applyPlotTheme(plot_, PlotTheme::System);
  plot_->replot(QCustomPlot::rpQueuedReplot);
  return ok;
}

}  // namespace ddpscope::ui
