#include "app/ui/statistics_panel.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTabWidget>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include "app/ui/format.h"
#include "app/ui/plot_export.h"
#include "app/ui/session.h"
#include "app/ui/timeline_view.h"

namespace ddpscope::ui {

StatisticsPanel::StatisticsPanel(Session* session, TimelineView* timeline, QWidget* parent)
    : QWidget(parent),
      session_(session),
      timeline_(timeline),
      scope_(new QLabel(this)),
      tabs_(new QTabWidget(this)),
      pending_(new QTimer(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout;
  auto* csv = new QPushButton(tr("Export CSV…"), this);
  csv->setToolTip(tr("Write the table showing as CSV (times in µs, shares in %)"));
  top->addWidget(scope_, 1);
  top->addWidget(csv);
  layout->addLayout(top);
  layout->addWidget(tabs_, 1);
  static const char* kNames[kTableCount] = {"Kernels", "Streams", "Steps"};
  for (int t = 0; t < kTableCount; ++t) {
    models_[t] = new StatisticsTableModel(this);
    proxies_[t] = new QSortFilterProxyModel(this);
    proxies_[t]->setSourceModel(models_[t]);
    proxies_[t]->setSortRole(StatisticsTableModel::kSortRole);
    views_[t] = new QTableView(this);
    views_[t]->setModel(proxies_[t]);
    views_[t]->setSortingEnabled(true);
    views_[t]->setSelectionBehavior(QAbstractItemView::SelectRows);
    views_[t]->setSelectionMode(QAbstractItemView::SingleSelection);
    views_[t]->setEditTriggers(QAbstractItemView::NoEditTriggers);
    views_[t]->verticalHeader()->setVisible(false);
    views_[t]->verticalHeader()->setDefaultSectionSize(20);
    views_[t]->horizontalHeader()->setStretchLastSection(false);
    views_[t]->setWordWrap(false);
    tabs_->addTab(views_[t], tr(kNames[t]));
    connect(views_[t], &QTableView::clicked, this, [this, t](const QModelIndex& index) {
      activateRow(static_cast<Table>(t), index.row());
    });
  }
  views_[kKernels]->setToolTip(tr("Click a kernel: its instances are highlighted on the timeline"));
  views_[kSteps]->setToolTip(tr("Click a step: the timeline zooms to it"));
  views_[kStreams]->setToolTip(tr("Click a stream: the timeline scrolls to its lane"));
  pending_->setSingleShot(true);
  pending_->setInterval(200);
  connect(pending_, &QTimer::timeout, this, [this] {
    if (isVisible()) {
      refresh();
    } else {
      dirty_ = true;
    }
  });
  connect(csv, &QPushButton::clicked, this, &StatisticsPanel::exportDialog);
  connect(session_, &Session::currentRunChanged, this, &StatisticsPanel::schedule);
  connect(session_, &Session::selectionChanged, this, &StatisticsPanel::schedule);
  refresh();
}

void StatisticsPanel::schedule() {
  dirty_ = true;
  pending_->start();
}

void StatisticsPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (dirty_) refresh();
}

QString StatisticsPanel::scopeText() const {
  const auto& sel = session_->selection();
  if (!session_->current()) return tr("No run loaded");
  if (sel && sel->length() > 0)
    return tr("Selection %1 (%2 → %3): kernels starting in it; streams busy in it; steps "
              "overlapping it")
        .arg(formatTime(sel->length()), formatTime(sel->lo), formatTime(sel->hi));
  return tr("Whole run (every rank); Shift+drag on the timeline to restrict to a range");
}

void StatisticsPanel::refresh() {
  pending_->stop();
  dirty_ = false;
  const auto run = session_->current();
  StatisticsScope scope;
  if (const auto& sel = session_->selection(); sel && sel->length() > 0)
    scope = analysis::TimeWindow{sel->lo, sel->hi};
  fillKernelTable(*models_[kKernels], run.get(), scope);
  fillStreamTable(*models_[kStreams], run.get(), scope);
  fillStepTable(*models_[kSteps], run.get(), scope);
  // Kernels by total time, longest first; the others in the analysis's order.
  views_[kKernels]->sortByColumn(3, Qt::DescendingOrder);
  for (int t = 0; t < kTableCount; ++t) {
    views_[t]->resizeColumnsToContents();
    views_[t]->setColumnWidth(0, std::min(views_[t]->columnWidth(0), 420));
  }
  scope_->setText(scopeText());
}

void StatisticsPanel::activateRow(Table t, int proxy_row) {
  if (proxy_row < 0 || proxy_row >= proxies_[t]->rowCount()) return;
  const int row = proxies_[t]->mapToSource(proxies_[t]->index(proxy_row, 0)).row();
  const auto& target = models_[t]->target(row);
  switch (target.kind) {
    case StatisticsTableModel::Target::Kind::Kernel:
      timeline_->searchName(target.name);
      break;
    case StatisticsTableModel::Target::Kind::Step:
      timeline_->goToStep(target.step, target.rank_index);
      break;
    case StatisticsTableModel::Target::Kind::Stream:
      timeline_->revealStream(target.rank_index, target.device, target.stream);
      break;
    case StatisticsTableModel::Target::Kind::None:
      break;
  }
}

bool StatisticsPanel::exportCsv(Table t, const QString& path, QString* error) const {
  if (!path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) {
    *error = tr("%1: a CSV file name must end in .csv").arg(path);
    return false;
  }
  // The table in the order it is sorted on screen.
  const auto* proxy = proxies_[t];
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(proxy->rowCount()));
  for (int r = 0; r < proxy->rowCount(); ++r)
    order.push_back(proxy->mapToSource(proxy->index(r, 0)).row());
  const std::string text = models_[t]->csv(order);
  return writeFileAtomically(path, QByteArray::fromStdString(text), error);
}

void StatisticsPanel::exportDialog() {
  const auto t = static_cast<Table>(tabs_->currentIndex());
  static const char* kFile[kTableCount] = {"kernels.csv", "streams.csv", "steps.csv"};
  const QString path = QFileDialog::getSaveFileName(this, tr("Export table as CSV"),
                                                    QString::fromUtf8(kFile[t]), tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!exportCsv(t, path, &error)) {
    scope_->setText(tr("Could not export: %1").arg(error));
  } else {
    scope_->setText(tr("Exported %1").arg(path));
  }
}

}  // namespace ddpscope::ui
