#include "app/ui/buckets_panel.h"

#include <qcustomplot.h>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTableView>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "app/analysis/bucket_steps.h"
#include "app/ui/buckets_model.h"
#include "app/ui/format.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

BucketsPanel::BucketsPanel(Session* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      note_(new QLabel(this)),
      model_(new BucketsModel(this)),
      sorted_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      params_(new QTreeWidget(this)),
      chart_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  // Wrapped: a long scope line must not make the window wider than the screen.
  note_->setWordWrap(true);
  layout->addWidget(note_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(table_);
  split->addWidget(chart_);
  split->addWidget(params_);
  // Room for the first columns (the rest scroll), not for all of them: the window's minimum
  // width is the sum of these.
  table_->setMinimumWidth(360);
  params_->setMinimumWidth(160);
  split->setSizes({760, 420, 240});
  layout->addWidget(split, 1);

  sorted_->setSourceModel(model_);
  sorted_->setSortRole(BucketsModel::kSortRole);
  table_->setModel(sorted_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(BucketsModel::kRank, Qt::AscendingOrder);
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

  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const auto rows = table_->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    session_->selectBucket(model_->keyAt(sorted_->mapToSource(rows.front()).row()));
  });
  connect(session_, &Session::currentRunChanged, this, &BucketsPanel::refresh);
  connect(session_, &Session::bucketSelected, this, &BucketsPanel::showSelection);
  refresh();
}

QString BucketsPanel::noteText() const {
  return note_->text();
}

void BucketsPanel::refresh() {
  params_->clear();
  chart_->clearPlottables();
  const auto run = session_->current();
  {
    const QSignalBlocker block(table_->selectionModel());
    model_->setRun(run);
  }
  // Buckets inferred from allreduces have no parameter list: the tensors column and the
  // parameter pane would hold only dashes, so they give their room to the table (whose last
  // column, exposed, was cut off at the window's default size).
  const bool lists =
      run && std::any_of(run->run.ranks.begin(), run->run.ranks.end(), [](const auto& r) {
        return std::any_of(r.ddpscope.buckets.begin(), r.ddpscope.buckets.end(),
                           [](const auto& def) { return !def.params.empty(); });
      });
  table_->setColumnHidden(BucketsModel::kTensors, !lists);
  params_->setVisible(lists);
  if (!run) {
    note_->clear();
    showNoRun(chart_);
    return;
  }
  refreshNote(*run);
  refreshChart(*run);
  showSelection();
}

void BucketsPanel::refreshNote(const LoadedRun& run) {
  bool inferred = false, any = false, kernel_time = false, transfer = false;
  for (const auto& r : run.report.ranks) {
    any = any || !r.buckets.empty();
    inferred = inferred || r.buckets_inferred;
    for (const auto& b : r.buckets) {  // of the steps the table shows
      if (!b.busbw_gbps || !analysis::inSelection(run.summary.selection, b.step)) continue;
      (b.bw_basis == analysis::BandwidthBasis::Kernel ? kernel_time : transfer) = true;
    }
  }
  QString text =
      !any ? tr("<b>No gradient buckets</b> in this run: it has neither ddpscope bucket "
                "metadata nor allreduce kernels to infer them from · %1")
                 .arg(sourceBadge(run.source()))
      : inferred
          ? tr("<b>Buckets inferred</b> from the allreduce kernels (this trace has no ddpscope "
               "bucket metadata: "
               "one allreduce per bucket and step, sizes from the kernels' message sizes) · %1")
                .arg(sourceBadge(run.source()))
          : tr("<b>Buckets</b> as planned by the run · %1").arg(sourceBadge(run.source()));
  // The steps the table and the chart cover: the run summary's, as the headline states them.
  if (any)
    text += tr("<br><span style='color:%1'>Table and chart: %2 (the steps the headline covers); "
               "ready is measured from the start of the bucket's step.</span>")
                .arg(colours::kLabelGrey.name(),
                     QString::fromStdString(run.summary.selection.rule).toHtmlEscaped());
  if (transfer)
    text +=
        QStringLiteral("<br><span style='color:%1'>%2.</span>")
            .arg(colours::kLabelGrey.name(),
                 QString::fromUtf8(analysis::kTransferBandwidthNote.data(),
                                   static_cast<qsizetype>(analysis::kTransferBandwidthNote.size()))
                     .toHtmlEscaped());
  if (kernel_time)
    text += QStringLiteral("<br><span style='color:%1'>%2</span>")
                .arg(colours::kLabelGrey.name(),
                     bandwidthBasisTip(analysis::BandwidthBasis::Kernel).toHtmlEscaped());
  note_->setText(text);
}

void BucketsPanel::refreshChart(const LoadedRun& run) {
  // Per bucket id, the mean allreduce split into hidden and exposed, over the selected steps and
  // every rank.
  QVector<double> keys, hidden, exposed;
  double top = 0;
  for (const auto& m : analysis::bucketMeans(run.report, run.summary.selection)) {
    keys.push_back(m.id);
    hidden.push_back(m.hidden_ns / 1e6);
    exposed.push_back(m.exposed_ns / 1e6);
    top = std::max(top, (m.hidden_ns + m.exposed_ns) / 1e6);
  }
  auto* hb = addBars(chart_, tr("hidden under compute"), colours::kCommHidden, keys, hidden);
  auto* eb = addBars(chart_, tr("exposed"), colours::kCommExposed, keys, exposed);
  eb->moveAbove(hb);
  setIntegerTicker(chart_->xAxis, QStringLiteral("b"),
                   keys.isEmpty() ? 0 : std::llround(keys.back()));
  chart_->xAxis->setLabel(tr("bucket"));
  chart_->yAxis->setLabel(tr("allreduce, ms"));
  showLegendBelow(chart_, !keys.isEmpty());
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
  const int row = model_->rowOf(*key);
  if (row < 0) return;  // a bucket of a step left out: not in the table
  const QSignalBlocker block(table_->selectionModel());
  const QModelIndex at = sorted_->mapFromSource(model_->index(row, BucketsModel::kId));
  table_->selectRow(at.row());
  table_->scrollTo(at);
}

bool BucketsPanel::exportChart(const QString& path, double scale, QString* error) {
  return exportRunChart(chart_, session_->current().get(), path, scale, error);
}

}  // namespace ddpscope::ui
