#include "app/ui/headline_bar.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QTextDocumentFragment>
#include <QVBoxLayout>

#include "app/analysis/step_breakdown.h"
#include "app/analysis/stragglers.h"
#include "app/ui/format.h"
#include "app/ui/palette.h"
#include "app/ui/run_text.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

namespace {
QLabel* makeMetricLabel(QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setTextFormat(Qt::RichText);
  l->setStyleSheet(QStringLiteral(
      "QLabel{padding:2px 10px; border:1px solid palette(mid); border-radius:4px;}"));
  return l;
}
// A badge: bold text of `text` colour on a rounded `fill`.
QString badgeStyleSheet(const QColor& text, const QColor& fill) {
  return QStringLiteral(
             "QLabel{color:%1; background:%2; font-weight:bold; padding:2px 8px; "
             "border-radius:3px;}")
      .arg(text.name(), fill.name());
}
QString metricHtml(const QString& name, const QString& value, const QColor& colour = QColor()) {
  const QString style =
      colour.isValid() ? QStringLiteral(" style='color:%1'").arg(colour.name()) : QString();
  return QStringLiteral("<span style='color:%1'>%2</span>&nbsp;<b%4>%3</b>")
      .arg(colours::kLabelGrey.name(), name, value, style);
}
}  // namespace

HeadlineBar::HeadlineBar(Session* session, QWidget* parent) : QWidget(parent), session_(session) {
  auto* rows = new QVBoxLayout(this);
  rows->setContentsMargins(6, 4, 6, 4);
  rows->setSpacing(2);
  auto* layout = new QHBoxLayout;
  layout->setSpacing(8);
  rows->addLayout(layout);
  reading_ = new QLabel(this);
  reading_->setTextFormat(Qt::PlainText);
  reading_->setStyleSheet(QStringLiteral("QLabel{color:%1;}").arg(colours::kWarningText.name()));
  reading_->setVisible(false);
  overlap_ = makeMetricLabel(this);
  exposed_ = makeMetricLabel(this);
  step_ = makeMetricLabel(this);
  efficiency_ = makeMetricLabel(this);
  idle_ = makeMetricLabel(this);
  split_ = makeMetricLabel(this);
  scope_ = new QLabel(this);
  scope_->setTextFormat(Qt::PlainText);
  scope_->setStyleSheet(QStringLiteral("QLabel{color:%1;}").arg(colours::kLabelGrey.name()));
  name_ = new QLabel(this);
  badge_ = new QLabel(this);
  incomplete_ = new QLabel(kIncompleteBadge, this);
  incomplete_->setStyleSheet(badgeStyleSheet(textOn(colours::kWarning), colours::kWarning));
  incomplete_->setVisible(false);
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 1.1);
  for (QLabel* l : {overlap_, exposed_, step_, efficiency_, idle_}) {
    l->setFont(f);
    layout->addWidget(l);
  }
  // A second row: how the exposed time splits (the longest chip, present only with a late rank)
  // and what the host did while the GPU sat idle. Beside the others, the split pushed the run's
  // name and scope out of a 1600-pixel window.
  split_->setFont(f);
  split_->setVisible(false);  // until a run has a late rank (shown with the bar, it took a row)
  auto* second = new QHBoxLayout;
  second->setSpacing(8);
  second->addWidget(split_);
  second->addWidget(reading_, 1);
  rows->addLayout(second);
  // The scope and the run's name give way (clipped; whole in their tooltips) before the window
  // is forced wider than a screen.
  // They keep their whole width where there is room, and shrink to a stub where not.
  reading_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  for (QLabel* l : {scope_, name_})
    l->setMinimumWidth(40);
  // So does the split of exposed communication ("waiting for rank N … · transfer …", whole in
  // its tooltip): shown whole where there is room, clipped where not.
  split_->setMinimumWidth(120);
  layout->addWidget(scope_);
  layout->addStretch(1);
  layout->addWidget(name_);
  layout->addWidget(incomplete_);
  layout->addWidget(badge_);
  connect(session_, &Session::currentRunChanged, this, &HeadlineBar::refresh);
  refresh();
}

QString HeadlineBar::overlapText() const {
  const auto run = session_->current();
  return run ? QString::fromStdString(analysis::runFigureText(run->summary).overlap) : QString();
}

QString HeadlineBar::dpEfficiencyText() const {
  const auto run = session_->current();
  return run ? QString::fromStdString(analysis::runFigureText(run->summary).dp_efficiency)
             : QString();
}

QString HeadlineBar::gpuIdleText() const {
  const auto run = session_->current();
  return run ? QString::fromStdString(analysis::runFigureText(run->summary).gpu_idle) : QString();
}

QString HeadlineBar::exposedSplitText() const {
  return split_->isVisibleTo(this) ? QTextDocumentFragment::fromHtml(split_->text()).toPlainText()
                                   : QString();
}

QString HeadlineBar::scopeText() const {
  return scope_->text();
}

QString HeadlineBar::readingText() const {
  return reading_->isVisibleTo(this) ? reading_->text() : QString();
}

QString HeadlineBar::nameText() const {
  return name_->text();
}

QString HeadlineBar::badgeText() const {
  return badge_->text();
}

QString HeadlineBar::incompleteText() const {
  return incomplete_->isVisibleTo(this) ? incomplete_->text() : QString();
}

QString HeadlineBar::incompleteToolTip() const {
  return incomplete_->toolTip();
}

void HeadlineBar::refresh() {
  const auto run = session_->current();
  setVisible(run != nullptr);
  if (!run) return;
  const auto t = analysis::runFigureText(run->summary);
  const auto q = [](const std::string& v) { return QString::fromStdString(v); };
  const bool steps = run->summary.hasSteps();
  overlap_->setText(metricHtml("overlap", q(t.overlap), colours::kOverlapText));
  overlap_->setToolTip(
      tr("Communication hidden under compute: Σ |comm ∩ compute| / Σ |comm| "
         "over ranks and the steps named on the right"));
  exposed_->setText(
      metricHtml(steps ? "exposed" : "exposed (whole trace)", q(t.exposed), colours::kCommExposed));
  exposed_->setToolTip(steps ? tr("Communication not hidden by compute, mean per rank and step")
                             : tr("Communication not hidden by compute, per rank, whole trace"));
  step_->setText(metricHtml("step", q(t.step)));
  step_->setToolTip(tr("The slowest rank's step time, mean over the steps named on the right"));
  efficiency_->setText(metricHtml("DP eff.", q(t.dp_efficiency)));
  efficiency_->setToolTip(
      tr("1 − exposed communication / step time over ranks and steps: what the step would take "
         "if communication were free, as a share of what it took"));
  // GPU idle is the headline's warning when it, not communication, is where the time goes.
  const bool idle_matters =
      run->summary.gpu_idle_pct && *run->summary.gpu_idle_pct >= analysis::kIdleReadingPct;
  idle_->setText(
      metricHtml("GPU idle", q(t.gpu_idle), idle_matters ? colours::kWarningText : QColor()));
  idle_->setToolTip(
      tr("Share of step time when the GPU ran nothing (no kernel, copy or set; the host "
         "waiting in a synchronisation counts as idle), over ranks and steps"));
  // What the figures say about themselves: where the idle time goes, why nothing overlaps. The
  // tooltip has them whole (the label may be clipped), each with what it is.
  const auto idle = q(analysis::idleReading(run->report, run->summary));
  const auto overlap = q(analysis::overlapReading(run->summary));
  QStringList readings, tips;
  if (!idle.isEmpty()) {
    readings << idle;
    tips << idle + tr("\nWhat the host was doing while the GPU sat idle, over ranks and the steps "
                      "named above: a launch pending (the GPU waited on a stream or a dependency), "
                      "in the data loader, or host-bound (nothing launched yet). The Steps tab "
                      "shows it per step.");
  }
  if (!overlap.isEmpty()) {
    readings << overlap;
    tips << overlap + tr("\nWith one or two gradient buckets per step, the allreduces start "
                         "when backward has finished: no compute is left to hide them.");
  }
  const QString reading = readings.join(QStringLiteral(" · "));
  reading_->setText(reading);
  reading_->setVisible(!reading.isEmpty());
  reading_->setToolTip(tips.join(QStringLiteral("\n\n")));
  // With a late rank its peers' waits count as hidden where compute runs beside them, so the
  // overlap rises: say how much of what stays exposed is waiting, and for whom.
  const auto late = analysis::summarizeStragglers(run->report);
  split_->setVisible(late.wait_pct.has_value());
  if (late.wait_pct) {
    const QString waiting = late.late_rank
                                ? QStringLiteral("waiting for rank %1").arg(*late.late_rank)
                                : QStringLiteral("waiting");
    // Where waiting ran under compute, the transfers' own overlap (the hidden split).
    const bool hidden_waits = late.hidden_wait_ns && *late.hidden_wait_ns > 0;
    split_->setText(
        metricHtml(waiting, formatPct(late.wait_pct, 1)) + QStringLiteral(" · ") +
        metricHtml(QStringLiteral("transfer"), formatPct(late.transfer_pct, 1)) +
        (hidden_waits && late.transfer_overlap_pct
             ? QStringLiteral(" · ") +
                   metricHtml(QStringLiteral("transfers alone overlapped"),
                              formatPct(late.transfer_overlap_pct, 1)) +
                   QStringLiteral(" (%1 with the waits)").arg(formatPct(late.whole_overlap_pct, 1))
             : QString()) +
        QStringLiteral(" (whole trace)"));
    split_->setToolTip(stragglerText(*run) +
                       tr("\nWaiting: exposed time inside a matched collective before its last "
                          "rank started. Transfer: the rest of the exposed time. Transfers alone "
                          "overlapped: the overlap without the waits, which count as hidden when "
                          "compute runs beside them."));
  }
  scope_->setText(q(t.scope));
  // Whole here, as the label may be clipped.
  scope_->setToolTip(q(t.scope) +
                     tr("\nThe steps these figures cover: those on every rank, without the first "
                        "(warm-up) when there are three or more, and without a short last step "
                        "of a trace that may end inside it"));
  // Ranks of the run with no trace are said here too, not only in the INCOMPLETE tooltip.
  name_->setText(QStringLiteral("%1 · %2").arg(run->name, ranksText(*run)));
  name_->setToolTip(name_->text());
  incomplete_->setVisible(run->incomplete());
  incomplete_->setToolTip(run->incompleteText());
  badge_->setText(sourceBadge(run->source()));
  badge_->setStyleSheet(badgeStyleSheet(colours::kOnBadge, badgeColour(run->source())));
}

}  // namespace ddpscope::ui
