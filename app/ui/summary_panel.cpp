#include "app/ui/summary_panel.h"

#include <qcustomplot.h>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "app/ui/collectives_model.h"
#include "app/ui/format.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"
#include "app/ui/run_text.h"
#include "app/ui/session.h"
#include "app/ui/summary_model.h"

namespace ddpscope::ui {

SummaryPanel::SummaryPanel(Session* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      note_(new QLabel(this)),
      model_(new SummaryModel(this)),
      sorted_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      kinds_(new CollectivesModel(this)),
      kinds_sorted_(new QSortFilterProxyModel(this)),
      kinds_table_(new QTableView(this)),
      chart_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  note_->setWordWrap(true);  // a long note must not make the window wider than the screen
  layout->addWidget(note_);
  auto* split = split_ = new QSplitter(Qt::Horizontal, this);
  // Per rank above, per collective kind and rank below.
  auto* tables = new QSplitter(Qt::Vertical, split);
  tables->addWidget(table_);
  auto* kinds_box = new QWidget(tables);
  auto* kinds_layout = new QVBoxLayout(kinds_box);
  kinds_layout->setContentsMargins(0, 2, 0, 0);
  kinds_title_ = new QLabel(kinds_box);
  kinds_title_->setWordWrap(true);
  kinds_layout->addWidget(kinds_title_);
  kinds_layout->addWidget(kinds_table_, 1);
  tables->addWidget(kinds_box);
  tables->setStretchFactor(0, 3);
  tables->setStretchFactor(1, 2);
  split->addWidget(tables);
  split->addWidget(chart_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  connect(split, &QSplitter::splitterMoved, this, [this] { split_moved_ = true; });
  sorted_->setSourceModel(model_);
  sorted_->setSortRole(SummaryModel::kSortRole);
  table_->setModel(sorted_);
  table_->setSortingEnabled(true);
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setAlternatingRowColors(true);
  // Sortable by any column (ranks by exposed communication, say); by rank at first.
  table_->sortByColumn(SummaryModel::kRank, Qt::AscendingOrder);
  kinds_sorted_->setSourceModel(kinds_);
  kinds_sorted_->setSortRole(CollectivesModel::kSortRole);
  kinds_table_->setModel(kinds_sorted_);
  kinds_table_->setSortingEnabled(true);
  kinds_table_->verticalHeader()->setVisible(false);
  kinds_table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  kinds_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  kinds_table_->setAlternatingRowColors(true);
  kinds_table_->sortByColumn(CollectivesModel::kRank, Qt::AscendingOrder);

  chart_->setMinimumWidth(260);
  addChartTitle(chart_, tr("Step time: exposed communication vs the rest"));
  putLegendBelow(chart_);
  // One entry a line: the chart is narrow beside the table, and two side by side were cut.
  chart_->legend->setWrap(1);
  applyPlotTheme(chart_, PlotTheme::System);
  connect(session_, &Session::currentRunChanged, this, &SummaryPanel::refresh);
  // A bar clicked: its step on the timeline; a rank's row clicked: its lanes.
  connect(chart_, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) {
    if (e->button() != Qt::LeftButton) return;
    if (const int step = stepAt(e->position().toPoint()); step >= 0) emit stepActivated(step);
  });
  connect(table_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const int row = sorted_->mapToSource(index).row();
    const auto run = session_->current();
    if (run && row >= 0 && row < static_cast<int>(run->report.ranks.size()))
      emit rankActivated(row);
  });
  refresh();
}

int SummaryPanel::stepAt(const QPoint& pos) const {
  for (const auto& [step, top] : bars_)
    if (onBar(chart_, pos, step, top)) return step;
  return -1;
}

void SummaryPanel::refresh() {
  chart_->clearPlottables();
  for (auto* item : left_out_)
    chart_->removeItem(item);
  left_out_.clear();
  bars_.clear();
  const auto run = session_->current();
  model_->setRun(run);
  kinds_->setRun(run);
  QString kinds_title =
      tr("<b>Communication per collective kind</b> <span style='color:%1'>(per rank, whole "
         "trace)</span>")
          .arg(colours::kLabelGrey.name());
  if (run && std::any_of(run->report.ranks.begin(), run->report.ranks.end(), [](const auto& r) {
        return std::any_of(r.collectives.begin(), r.collectives.end(), [](const auto& c) {
          return c.algbw_gbps && c.bw_basis == analysis::BandwidthBasis::Kernel;
        });
      }))
    kinds_title += QStringLiteral("<br><span style='color:%1'>%2</span>")
                       .arg(colours::kLabelGrey.name(),
                            bandwidthBasisTip(analysis::BandwidthBasis::Kernel).toHtmlEscaped());
  kinds_title_->setText(kinds_title);
  if (!run) {
    note_->clear();
    showNoRun(chart_);
    return;
  }
  refreshNote(*run);
  refreshChart(*run);
  fitTableWidth();
}

void SummaryPanel::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  fitTableWidth();
}

void SummaryPanel::fitTableWidth() {
  if (split_moved_ || !model_->rowCount()) return;
  const int total = split_->width() - split_->handleWidth();
  if (total <= 0) return;
  table_->resizeColumnsToContents();
  // Every column, the frame, and a vertical scroll bar's room should the rows need one.
  const int wanted = table_->horizontalHeader()->length() + 2 * table_->frameWidth() +
                     table_->verticalScrollBar()->sizeHint().width();
  const int chart = std::max(chart_->minimumWidth(), total - wanted);
  split_->setSizes({total - chart, chart});
}

void SummaryPanel::refreshNote(const LoadedRun& run) {
  note_->setText(tr("<b>%1</b> — %2 · %3 events · loaded in %4 s")
                     .arg(run.name.toHtmlEscaped(), sourceBadge(run.source()))
                     .arg(QLocale().toString(static_cast<qlonglong>(run.run.eventCount())))
                     .arg(run.load_seconds, 0, 'f', 2) +
                 (run.incomplete() ? QStringLiteral(" · <b style='color:%1'>%2</b>")
                                         .arg(colours::kWarningText.name(), kIncompleteBadge)
                                   : QString()));
  // What the CLI prints as warnings: said here too, whole in the tooltip.
  const QStringList warnings = runWarnings(run);
  if (!warnings.isEmpty()) {
    note_->setText(note_->text() +
                   QStringLiteral(" · <b style='color:%1'>%2</b>")
                       .arg(colours::kWarningText.name(), warningCount(warnings.size())));
  }
  // Which figures cover what: the whole trace, or the steps the headline covers.
  const QString rule = QString::fromStdString(run.summary.selection.rule).toHtmlEscaped();
  note_->setText(
      note_->text() +
      (run.summary.selection.whole_trace
           ? tr("<br><span style='color:%1'>Per rank: every figure over the whole trace "
                "(%2).</span>")
           : tr("<br><span style='color:%1'>Per rank: overlap, comm, hidden, exposed, waiting and "
                "transfer over the whole trace; step, exposed/step, DP eff. and GPU idle over "
                "%2.</span>"))
          .arg(colours::kLabelGrey.name(), rule));
  // Whether exposed communication is a late rank's doing or transfer, and which rank.
  if (const QString late = stragglerText(run); !late.isEmpty())
    note_->setText(note_->text() + QStringLiteral("<br>") + late.toHtmlEscaped());
  if (const QString quiet = firstQuietText(run.summary); !quiet.isEmpty())
    note_->setText(note_->text() + QStringLiteral("<br>") + quiet.toHtmlEscaped());
  QStringList tip;
  if (run.incomplete()) tip << run.incompleteText();
  for (const auto& w : warnings)
    tip << QStringLiteral("⚠ ") + w;
  note_->setToolTip(tip.join(QLatin1Char('\n')));
}

void SummaryPanel::refreshChart(const LoadedRun& run) {
  // Per step, mean over ranks: the exposed communication stacked on the rest of the step.
  QVector<double> keys, rest, exposed;
  bars_.clear();
  for (const auto& m : analysis::stepMeans(run.report)) {
    bars_.emplace_back(m.step, static_cast<double>(m.step_ns) / 1e6);
    keys.push_back(m.step);
    rest.push_back(static_cast<double>(m.step_ns - m.exposed_ns) / 1e6);
    exposed.push_back(static_cast<double>(m.exposed_ns) / 1e6);
  }
  auto* rest_bars =
      // Neutral: the rest holds compute, hidden communication, memory and idle time alike (the
      // Steps tab splits it); coloured as compute it read as a busy GPU.
      addBars(chart_, tr("rest of the step (Steps tab splits it)"), colours::kStep, keys, rest);
  auto* exposed_bars =
      addBars(chart_, tr("exposed communication"), colours::kCommExposed, keys, exposed);
  exposed_bars->moveAbove(rest_bars);
  setIntegerTicker(chart_->xAxis, QString(), keys.isEmpty() ? 0 : std::llround(keys.back()));
  // The steps the headline's figures leave out (warm-up, on some ranks only, cut short): drawn,
  // hatched, as the Digest tab's heatmap draws them.
  const auto& used = run.summary.selection.used;
  if (!run.summary.selection.whole_trace && !used.empty()) {
    for (int i = 0; i < keys.size(); ++i) {
      if (std::binary_search(used.begin(), used.end(), static_cast<std::int32_t>(keys[i])))
        continue;
      auto* hatch = new QCPItemRect(chart_);
      hatch->setClipToAxisRect(true);
      hatch->setSelectable(false);
      hatch->topLeft->setCoords(keys[i] - kBarWidth / 2, rest[i] + exposed[i]);
      hatch->bottomRight->setCoords(keys[i] + kBarWidth / 2, 0);
      hatch->setPen(Qt::NoPen);
      hatch->setBrush(leftOutHatch());
      left_out_.push_back(hatch);
    }
  }
  chart_->xAxis->setLabel(left_out_.empty() ? tr("step")
                                            : tr("step (hatched: left out of the run's figures)"));
  chart_->yAxis->setLabel(tr("ms (mean over ranks)"));
  showLegendBelow(chart_, !keys.isEmpty());
  setEmptyNote(chart_,
               keys.isEmpty() ? tr("No training steps found in this run\n(steps come from "
                                   "ProfilerStep#N ranges or the agent's step markers)")
                              : QString(),
               {chart_->xAxis, chart_->yAxis});
  chart_->rescaleAxes();
  if (!keys.isEmpty()) {
    setCategoryRange(chart_->xAxis, keys.front(), keys.back(), kBarWidth);
    double top = 0;
    for (int i = 0; i < keys.size(); ++i)
      top = std::max(top, rest[i] + exposed[i]);
    chart_->yAxis->setRange(0, top * 1.1);
  }
  applyPlotTheme(chart_, PlotTheme::System);
  chart_->replot();
}

bool SummaryPanel::exportChart(const QString& path, double scale, QString* error) {
  return exportRunChart(chart_, session_->current().get(), path, scale, error);
}

}  // namespace ddpscope::ui
