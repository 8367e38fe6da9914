#include "app/ui/summary_panel.h"

#include <qcustomplot.h>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <map>

#include "app/ui/palette.h"
#include "app/ui/session.h"
#include "app/ui/table_items.h"

namespace ddpscope::ui {

namespace {
QTableWidgetItem* numberItem(const QString& text, double sort_value) {
  return new NumberItem(text, sort_value);
}
}  // namespace

SummaryPanel::SummaryPanel(Session* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      note_(new QLabel(this)),
      table_(new QTableWidget(this)),
      chart_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(note_);
  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(table_);
  split->addWidget(chart_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  const QStringList headers = {tr("rank"),    tr("source"),  tr("overlap"),     tr("comm"),
                               tr("hidden"),  tr("exposed"), tr("step (mean)"), tr("exposed/step"),
                               tr("DP eff."), tr("idle"),    tr("kernels")};
  table_->setColumnCount(static_cast<int>(headers.size()));
  table_->setHorizontalHeaderLabels(headers);
  table_->verticalHeader()->setVisible(false);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setAlternatingRowColors(true);
  // Sortable by any column (ranks by exposed communication, say); by rank at first.
  table_->horizontalHeader()->setSortIndicator(0, Qt::AscendingOrder);

  chart_->setMinimumWidth(260);
  chart_->plotLayout()->insertRow(0);
  chart_->plotLayout()->addElement(
      0, 0,
      new QCPTextElement(chart_, tr("Step time: exposed communication vs the rest"),
                         QFont(font().family(), 9, QFont::Bold)));
  putLegendBelow(chart_);
  applyPlotTheme(chart_, PlotTheme::System);
  connect(session_, &Session::currentRunChanged, this, &SummaryPanel::refresh);
  refresh();
}

void SummaryPanel::refresh() {
  table_->setRowCount(0);
  chart_->clearPlottables();
  const auto run = session_->current();
  if (!run) {
    showNoRun(chart_);
    return;
  }
  const auto& report = run->report;
  note_->setText(tr("<b>%1</b> — %2 · %3 events · loaded in %4 s")
                     .arg(run->name.toHtmlEscaped(), sourceBadge(run->source()))
                     .arg(QLocale().toString(static_cast<qlonglong>(run->run.eventCount())))
                     .arg(run->load_seconds, 0, 'f', 2) +
                 (run->incomplete()
                      ? QStringLiteral(" · <b style='color:%1'>%2</b>")
                            .arg(colours::kWarning.darker(140).name(), kIncompleteBadge)
                      : QString()));
  // What the CLI prints as warnings: said here too, whole in the tooltip.
  const QStringList warnings = runWarnings(*run);
  if (!warnings.isEmpty()) {
    note_->setText(note_->text() +
                   QStringLiteral(" · <b style='color:%1'>%2</b>")
                       .arg(colours::kWarning.darker(140).name(), warningCount(warnings.size())));
  }
  QStringList tip;
  if (run->incomplete()) tip << run->incompleteText();
  for (const auto& w : warnings)
    tip << QStringLiteral("⚠ ") + w;
  note_->setToolTip(tip.join(QLatin1Char('\n')));
  table_->setSortingEnabled(false);  // rows are filled in place, then sorted once
  // Ranks of the run without a trace get a row too, so that the table shows the whole world.
  const auto& missing = run->completeness.missing_ranks;
  const int missing_rows = static_cast<int>(std::min<std::size_t>(missing.size(), 1024));
  table_->setRowCount(static_cast<int>(report.ranks.size()) + missing_rows);
  int row = 0;
  for (const auto& r : report.ranks) {
    TimeNs step_sum = 0, exposed_sum = 0;
    double eff = 0;
    int effs = 0;
    for (const auto& s : r.steps) {
      step_sum += s.dur_ns;
      exposed_sum += s.metrics.exposed_ns;
      if (s.dp_efficiency) eff += *s.dp_efficiency, ++effs;
    }
    const auto n = static_cast<TimeNs>(std::max<std::size_t>(1, r.steps.size()));
    std::int64_t kernels = 0;
    for (auto c : r.counts)
      kernels += c;
    const auto& m = r.whole;
    int col = 0;
    table_->setItem(row, col++, numberItem(QString::number(r.rank), r.rank));
    auto* src = new QTableWidgetItem(sourceBadge(r.source));
    src->setForeground(badgeColour(r.source));
    if (r.incomplete) {
      src->setText(src->text() + QStringLiteral(" · ") + kIncompleteBadge);
      src->setForeground(colours::kWarning.darker(140));
      src->setToolTip(tr("The trace of rank %1 is cut short: its producer stopped before the run "
                         "finished (error or timeout); its numbers cover only what was recorded.")
                          .arg(r.rank));
    }
    table_->setItem(row, col++, src);
    table_->setItem(row, col++, numberItem(formatPct(m.overlap_pct), m.overlap_pct.value_or(-1)));
    table_->setItem(row, col++, numberItem(formatTime(m.comm_ns), static_cast<double>(m.comm_ns)));
    table_->setItem(row, col++,
                    numberItem(formatTime(m.overlap_ns), static_cast<double>(m.overlap_ns)));
    table_->setItem(row, col++,
                    numberItem(formatTime(m.exposed_ns), static_cast<double>(m.exposed_ns)));
    table_->setItem(row, col++,
                    numberItem(r.steps.empty() ? "n/a" : formatTime(step_sum / n),
                               static_cast<double>(step_sum / n)));
    table_->setItem(row, col++,
                    numberItem(r.steps.empty() ? "n/a" : formatTime(exposed_sum / n),
                               static_cast<double>(exposed_sum / n)));
    table_->setItem(
        row, col++,
        numberItem(effs ? formatPct(100.0 * eff / effs, 1) : "n/a", effs ? eff / effs : -1));
    table_->setItem(row, col++, numberItem(QString::number(m.idle_pct, 'f', 1) + " %", m.idle_pct));
    table_->setItem(row, col++,
                    numberItem(QLocale().toString(static_cast<qlonglong>(kernels)),
                               static_cast<double>(kernels)));
    ++row;
  }
  for (int k = 0; k < missing_rows; ++k) {
    const auto rank = missing[static_cast<std::size_t>(k)];
    table_->setItem(row, 0, numberItem(QString::number(rank), rank));
    auto* src = new QTableWidgetItem(tr("no trace"));
    src->setForeground(colours::kWarning.darker(140));
    src->setToolTip(tr("Rank %1 of the run left no trace: its process failed before writing "
                       "one, or its file was not opened with the others.")
                        .arg(rank));
    table_->setItem(row, 1, src);
    for (int col = 2; col < table_->columnCount(); ++col)
      table_->setItem(row, col, numberItem(QStringLiteral("–"), -1));
    ++row;
  }
  table_->setSortingEnabled(true);

  // Per step, mean over ranks: the exposed communication stacked on the rest of the step.
  std::map<std::int32_t, std::pair<double, double>> per_step;  // step -> (rest, exposed) in ms
  std::map<std::int32_t, int> counts;
  for (const auto& r : report.ranks) {
    for (const auto& s : r.steps) {
      auto& v = per_step[s.step];
      v.first += static_cast<double>(s.dur_ns - s.metrics.exposed_ns) / 1e6;
      v.second += static_cast<double>(s.metrics.exposed_ns) / 1e6;
      ++counts[s.step];
    }
  }
  QVector<double> keys, rest, exposed;
  for (const auto& [step, v] : per_step) {
    keys.push_back(step);
    rest.push_back(v.first / counts[step]);
    exposed.push_back(v.second / counts[step]);
  }
  auto* rest_bars = new QCPBars(chart_->xAxis, chart_->yAxis);
  rest_bars->setName(tr("step time minus exposed comm"));
  rest_bars->setBrush(colours::kCompute);
  rest_bars->setPen(Qt::NoPen);
  rest_bars->setData(keys, rest);
  auto* exposed_bars = new QCPBars(chart_->xAxis, chart_->yAxis);
  exposed_bars->setName(tr("exposed communication"));
  exposed_bars->setBrush(colours::kCommExposed);
  exposed_bars->setPen(Qt::NoPen);
  exposed_bars->setData(keys, exposed);
  exposed_bars->moveAbove(rest_bars);
  for (auto* b : {rest_bars, exposed_bars})
    b->setWidth(0.7);
  setIntegerTicker(chart_->xAxis, QString(), keys.isEmpty() ? 0 : std::llround(keys.back()));
  chart_->xAxis->setLabel(tr("step"));
  chart_->yAxis->setLabel(tr("ms (mean over ranks)"));
  chart_->legend->setVisible(!keys.isEmpty());
  setEmptyNote(chart_,
               keys.isEmpty() ? tr("No training steps found in this run\n(steps come from "
                                   "ProfilerStep#N ranges or the agent's step markers)")
                              : QString(),
               {chart_->xAxis, chart_->yAxis});
  chart_->rescaleAxes();
  if (!keys.isEmpty()) {
    setCategoryRange(chart_->xAxis, keys.front(), keys.back(), 0.7);
    double top = 0;
    for (int i = 0; i < keys.size(); ++i)
      top = std::max(top, rest[i] + exposed[i]);
    chart_->yAxis->setRange(0, top * 1.1);
  }
  applyPlotTheme(chart_, PlotTheme::System);
  chart_->replot();
}

bool SummaryPanel::exportChart(const QString& path, double scale, QString* error) {
  const auto run = session_->current();
  return exportTitledChart(chart_, run ? runTitle(*run, true) : QString(), path, scale, error);
}

}  // namespace ddpscope::ui
