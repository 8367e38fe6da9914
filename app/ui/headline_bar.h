#pragma once
// The numbers above the timeline, always visible, with the run's source badge.

#include <QWidget>

class QLabel;

namespace ddpscope::ui {

class Session;

class HeadlineBar : public QWidget {
  Q_OBJECT
 public:
  explicit HeadlineBar(Session* session, QWidget* parent = nullptr);
  QString overlapText() const;
  QString dpEfficiencyText() const;
  QString gpuIdleText() const;
  // The exposed communication's split (whole trace): "waiting for rank 2 81.2 % · transfer
  // 18.8 %"; "" when hidden (no collective matched across ranks). Its tooltip: stragglerText.
  QString exposedSplitText() const;
  // The steps the figures cover, in words (analysis::StepSelection::rule).
  QString scopeText() const;
  // The readings under the figures, joined by " · ": of the GPU idle time (analysis::idleReading,
  // "GPU idle 75.7 %: mostly host-bound (no launch pending)") and of a near-zero overlap with one
  // bucket per step (analysis::overlapReading); "" (hidden) when neither has anything to say.
  QString readingText() const;
  QString badgeText() const;
  // The run's name and the ranks it holds ("b25 · 8 ranks", "die · 3 of 4 ranks").
  QString nameText() const;
  // The INCOMPLETE badge: its text ("" when the current run is complete) and its tooltip.
  QString incompleteText() const;
  QString incompleteToolTip() const;

 private:
  void refresh();
  Session* session_;
  QLabel *overlap_, *exposed_, *step_, *efficiency_, *idle_, *split_, *scope_, *badge_, *name_,
      *incomplete_, *reading_;
};

}  // namespace ddpscope::ui
