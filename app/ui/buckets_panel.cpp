#include "app/ui/buckets_panel.h"

#include <qcustomplot.h>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <map>

#include "app/ui/format.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"
#include "app/ui/session.h"
#include "app/ui/table_items.h"

namespace ddpscope::ui {

namespace {
enum Column {
  kRank,
  kStep,
  kId,
  kTensors,
  kMB,
  kReady,
  kWait,
  kDuration,
  kBusbw,
  kExposed,
  kColumns
};
constexpr int kKeyRole = Qt::UserRole + 1;
static_assert(kKeyRole != NumberItem::kSortRole);

QTableWidgetItem* cell(const QString& text, double value) {
  return new NumberItem(text, value);
}
}  // namespace

BucketsPanel::BucketsPanel(Session* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      note_(new QLabel(this)),
      table_(new QTableWidget(this)),
      params_(new QTreeWidget(this)),
      chart_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(note_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(table_);
  split->addWidget(chart_);
  split->addWidget(params_);
  table_->setMinimumWidth(640);
  params_->setMinimumWidth(200);
  split->setSizes({760, 420, 240});
  layout->addWidget(split, 1);

  table_->setColumnCount(kColumns);
  table_->setHorizontalHeaderLabels({tr("rank"), tr("step"), tr("bucket"), tr("tensors"),
                                     tr("size"), tr("ready"), tr("wait"), tr("allreduce"),
                                     tr("busbw"), tr("exposed")});
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setAlternatingRowColors(true);
  params_->setColumnCount(2);
  params_->setHeaderLabels({tr("parameter"), tr("size")});
  params_->setRootIsDecorated(false);
  // Sizes always readable; long parameter names are elided (the tooltip has them whole).
  params_->header()->setStretchLastSection(false);
  params_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  params_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);

  chart_->setMinimumWidth(240);
  addChartTitle(chart_, tr("Allreduce per bucket, mean: hidden / exposed"));
  putLegendBelow(chart_);

  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    const auto rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    const QPoint key = table_->item(rows.front().row(), kId)->data(kKeyRole).toPoint();
    session_->selectBucket(BucketKey{key.x(), key.y()});
  });
  connect(session_, &Session::currentRunChanged, this, &BucketsPanel::refresh);
  connect(session_, &Session::bucketSelected, this, &BucketsPanel::showSelection);
  refresh();
}

QString BucketsPanel::noteText() const {
  return note_->text();
}

void BucketsPanel::refresh() {
  QSignalBlocker block(table_);
  table_->setRowCount(0);
  params_->clear();
  chart_->clearPlottables();
  const auto run = session_->current();
  if (!run) {
    showNoRun(chart_);
    return;
  }
  refreshNote(*run);
  fillTable(*run);
  refreshChart(*run);
  table_->setSortingEnabled(true);
  showSelection();
}

void BucketsPanel::refreshNote(const LoadedRun& run) {
  bool inferred = false, any = false;
  for (const auto& r : run.report.ranks) {
    any = any || !r.buckets.empty();
    inferred = inferred || r.buckets_inferred;
  }
  note_->setText(
      !any ? tr("<b>No gradient buckets</b> in this run: it has neither ddpscope bucket "
                "metadata nor allreduce kernels to infer them from · %1")
                 .arg(sourceBadge(run.source()))
      : inferred
          ? tr("<b>Buckets inferred</b> from the allreduce kernels (this trace has no ddpscope "
               "bucket metadata: "
               "one allreduce per bucket and step, sizes from the kernels' message sizes) · %1")
                .arg(sourceBadge(run.source()))
          : tr("<b>Buckets</b> as planned by the run · %1").arg(sourceBadge(run.source())));
}

void BucketsPanel::fillTable(const LoadedRun& run) {
  int rows = 0;
  for (const auto& r : run.report.ranks)
    rows += static_cast<int>(r.buckets.size());
  table_->setRowCount(rows);
  table_->setSortingEnabled(false);
  int row = 0;
  for (std::size_t ri = 0; ri < run.report.ranks.size(); ++ri) {
    const auto& rr = run.report.ranks[ri];
    for (std::size_t bi = 0; bi < rr.buckets.size(); ++bi) {
      const auto& b = rr.buckets[bi];
      table_->setItem(row, kRank, cell(QString::number(rr.rank), rr.rank));
      table_->setItem(row, kStep,
                      cell(b.step == trace::kNoStep ? "–" : QString::number(b.step), b.step));
      auto* id = cell(QString::number(b.id), b.id);
      id->setData(kKeyRole, QPoint(static_cast<int>(ri), static_cast<int>(bi)));
      id->setData(Qt::DecorationRole, bucketColour(b.id));
      table_->setItem(row, kId, id);
      table_->setItem(row, kTensors,
                      cell(b.tensors > 0 ? QString::number(b.tensors) : "–", b.tensors));
      table_->setItem(row, kMB, cell(formatBytes(b.bytes), static_cast<double>(b.bytes)));
      table_->setItem(row, kReady, cell(formatTime(b.ready_ns), static_cast<double>(b.ready_ns)));
      table_->setItem(row, kWait, cell(formatTime(b.wait_ns), static_cast<double>(b.wait_ns)));
      table_->setItem(
          row, kDuration,
          cell(formatTime(b.end_ns - b.start_ns), static_cast<double>(b.end_ns - b.start_ns)));
      table_->setItem(row, kBusbw, cell(formatBandwidth(b.busbw_gbps), b.busbw_gbps.value_or(-1)));
      auto* exposed = cell(formatTime(b.exposed_ns), static_cast<double>(b.exposed_ns));
      if (b.exposed_ns > (b.end_ns - b.start_ns) / 2) exposed->setForeground(colours::kCommExposed);
      table_->setItem(row, kExposed, exposed);
      ++row;
    }
  }
}

void BucketsPanel::refreshChart(const LoadedRun& run) {
  // Per bucket id, the mean allreduce split into hidden and exposed, over steps and ranks.
  std::map<std::int32_t, std::array<double, 3>> per_id;  // hidden ms, exposed ms, count
  for (const auto& rr : run.report.ranks) {
    for (const auto& b : rr.buckets) {
      auto& v = per_id[b.id];
      v[0] += static_cast<double>(b.end_ns - b.start_ns - b.exposed_ns) / 1e6;
      v[1] += static_cast<double>(b.exposed_ns) / 1e6;
      v[2] += 1;
    }
  }
  QVector<double> keys, hidden, exposed;
  double top = 0;
  for (const auto& [id, v] : per_id) {
    keys.push_back(id);
    hidden.push_back(v[0] / v[2]);
    exposed.push_back(v[1] / v[2]);
    top = std::max(top, (v[0] + v[1]) / v[2]);
  }
  auto* hb = addBars(chart_, tr("hidden under compute"), colours::kCommHidden, keys, hidden);
  auto* eb = addBars(chart_, tr("exposed"), colours::kCommExposed, keys, exposed);
  eb->moveAbove(hb);
  setIntegerTicker(chart_->xAxis, QStringLiteral("b"),
                   keys.isEmpty() ? 0 : std::llround(keys.back()));
  chart_->xAxis->setLabel(tr("bucket"));
  chart_->yAxis->setLabel(tr("allreduce, ms"));
  chart_->legend->setVisible(!keys.isEmpty());
  setEmptyNote(chart_, keys.isEmpty() ? tr("No gradient buckets in this run") : QString(),
               {chart_->xAxis, chart_->yAxis});
  if (!keys.isEmpty()) {
    setCategoryRange(chart_->xAxis, keys.front(), keys.back(), kBarWidth);
    chart_->yAxis->setRange(0, top * 1.1);
  }
  applyPlotTheme(chart_, PlotTheme::System);
  chart_->replot();
}

void BucketsPanel::showSelection() {
  params_->clear();
  const auto run = session_->current();
  const auto& key = session_->selectedBucket();
  if (!run || !key) return;
  const auto& rr = run->report.ranks[static_cast<std::size_t>(key->rank_index)];
  const auto& b = rr.buckets[static_cast<std::size_t>(key->report_index)];
  const auto& rank = run->run.ranks[static_cast<std::size_t>(key->rank_index)];
  for (const auto& def : rank.ddpscope.buckets) {
    if (def.id != b.id) continue;
    for (const auto& p : def.params) {
      auto* item =
          new QTreeWidgetItem(params_, {QString::fromStdString(p.name), formatBytes(p.bytes)});
      item->setTextAlignment(1, Qt::AlignRight);
      item->setToolTip(0, QString::fromStdString(p.name));
    }
  }
  if (params_->topLevelItemCount() == 0) {
    auto* none = new QTreeWidgetItem(params_, {tr("(no parameter list: inferred bucket)")});
    none->setFirstColumnSpanned(true);
    none->setToolTip(0, tr("This bucket was inferred from its allreduce: the trace does not say "
                           "which parameters it holds."));
  }
  // Keep the table's selection in step when the bucket was selected elsewhere (the timeline).
  QSignalBlocker block(table_);
  for (int row = 0; row < table_->rowCount(); ++row) {
    const QPoint k = table_->item(row, kId)->data(kKeyRole).toPoint();
    if (k.x() == key->rank_index && k.y() == key->report_index) {
      table_->selectRow(row);
      table_->scrollToItem(table_->item(row, kId));
      break;
    }
  }
}

bool BucketsPanel::exportChart(const QString& path, double scale, QString* error) {
  return exportRunChart(chart_, session_->current().get(), path, scale, error);
}

}  // namespace ddpscope::ui
