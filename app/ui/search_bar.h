#pragma once
// Finding things on the timeline (docs/UI.md "Search"): a regular expression over the names of
// the events the lanes draw (the stream lanes' kernels, copies, sets and synchronisations, the
// GPU annotation lanes' ranges, the host lanes' CPU ops, user annotations and runtime/driver
// calls), every match highlighted, next / previous, the count; and "go to step N".

#include <QRegularExpression>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "app/ui/draw_list.h"
#include "app/ui/timeline_model.h"

class QLineEdit;
class QLabel;
class QSpinBox;
class QToolButton;

namespace ddpscope::ui {

struct LoadedRun;

// One event whose name matches.
struct SearchMatch {
  std::int32_t rank_index = 0;
  std::int32_t track = 0;  // index in RankTrace::tracks
  std::uint32_t index = 0;
  trace::TimeNs start = 0, end = 0;
  // The kind of lane that draws it (Stream, GpuAnnotation or Host) and, for a host event, the row
  // of its thread's group holding it (its depth of nesting, the last row holding deeper ones).
  LaneKind kind = LaneKind::Stream;
  std::int16_t row = 0;
};

// Every match of `re` among the events the lanes of `run` draw (stream, GPU annotation and host
// lanes), in time order (ties: rank, track, index). Each distinct name of a rank is matched once.
std::vector<SearchMatch> findMatches(const LoadedRun& run, const QRegularExpression& re);

class SearchBar : public QWidget {
  Q_OBJECT
 public:
  explicit SearchBar(QWidget* parent = nullptr);

  QLineEdit* field() const { return field_; }
  QSpinBox* stepBox() const { return step_; }
  // The text shown beside the field: "3 / 120", "no match", or why the expression is invalid.
  QString countText() const;
  // Sets the count label: `current` (0-based, -1 for none) of `total`.
  void showCount(int current, std::size_t total);
  void showError(const QString& message);
  void clearCount();
  // Shows `pattern` in the field without searching again.
  void setPattern(const QString& pattern);
  void setStepRange(int lo, int hi);
  // Puts the keyboard focus on the step box, its number selected.
  void focusStep();

 signals:
  void searchChanged(const QString& pattern);  // after the user stops typing, or on Enter
  void nextRequested();
  void previousRequested();
  void stepRequested(int step);

 private:
  QLineEdit* field_;
  QToolButton* prev_;
  QToolButton* next_;
  QLabel* count_;
  QSpinBox* step_;
};

}  // namespace ddpscope::ui
