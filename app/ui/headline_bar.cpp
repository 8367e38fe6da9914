#include "app/ui/headline_bar.h"

#include <QHBoxLayout>
#include <QLabel>

#include "app/ui/palette.h"
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
QString metricHtml(const QString& name, const QString& value, const QColor& colour = QColor()) {
  const QString style =
      colour.isValid() ? QStringLiteral(" style='color:%1'").arg(colour.name()) : QString();
  return QStringLiteral("<span style='color:gray'>%1</span>&nbsp;<b%3>%2</b>")
      .arg(name, value, style);
}
}  // namespace

HeadlineBar::HeadlineBar(Session* session, QWidget* parent) : QWidget(parent), session_(session) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 4);
  layout->setSpacing(8);
  overlap_ = makeMetricLabel(this);
  exposed_ = makeMetricLabel(this);
  step_ = makeMetricLabel(this);
  efficiency_ = makeMetricLabel(this);
  name_ = new QLabel(this);
  badge_ = new QLabel(this);
  incomplete_ = new QLabel(kIncompleteBadge, this);
  incomplete_->setStyleSheet(QStringLiteral("QLabel{color:%1; background:%2; font-weight:bold; "
                                            "padding:2px 8px; border-radius:3px;}")
                                 .arg(textOn(colours::kWarning).name(), colours::kWarning.name()));
  incomplete_->setVisible(false);
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * 1.1);
  for (QLabel* l : {overlap_, exposed_, step_, efficiency_}) {
    l->setFont(f);
    layout->addWidget(l);
  }
  layout->addStretch(1);
  layout->addWidget(name_);
  layout->addWidget(incomplete_);
  layout->addWidget(badge_);
  connect(session_, &Session::currentRunChanged, this, &HeadlineBar::refresh);
  refresh();
}

QString HeadlineBar::overlapText() const {
  const auto run = session_->current();
  return run ? formatPct(computeHeadline(run->report).overlap_pct) : QString();
}

QString HeadlineBar::dpEfficiencyText() const {
  const auto run = session_->current();
  return run ? formatPct(computeHeadline(run->report).dp_efficiency, 1) : QString();
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
  const Headline h = computeHeadline(run->report);
  overlap_->setText(
      metricHtml("overlap", formatPct(h.overlap_pct), colours::kCommHidden.darker(130)));
  overlap_->setToolTip(tr("Communication hidden under compute: |comm ∩ compute| / |comm|"));
  exposed_->setText(metricHtml(h.has_steps ? "exposed" : "exposed (whole trace)",
                               formatTime(h.exposed_per_step_ns) + (h.has_steps ? "/step" : ""),
                               colours::kCommExposed));
  exposed_->setToolTip(tr("Communication not hidden by compute, mean per step"));
  step_->setText(metricHtml("step", h.has_steps ? formatTime(h.step_ns) : QStringLiteral("n/a")));
  efficiency_->setText(metricHtml("DP eff.", formatPct(h.dp_efficiency, 1)));
  efficiency_->setToolTip(tr("Compute-only critical path / step time, mean over steps and ranks"));
  // Ranks of the run with no trace are said here too, not only in the INCOMPLETE tooltip.
  name_->setText(QStringLiteral("%1 · %2").arg(run->name, ranksText(*run)));
  incomplete_->setVisible(run->incomplete());
  incomplete_->setToolTip(run->incompleteText());
  badge_->setText(sourceBadge(run->source()));
  badge_->setStyleSheet(QStringLiteral("QLabel{color:white; background:%1; font-weight:bold; "
                                       "padding:2px 8px; border-radius:3px;}")
                            .arg(badgeColour(run->source()).name()));
}

}  // namespace ddpscope::ui
