#include "app/ui/search_bar.h"

#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>
#include <algorithm>
#include <functional>
#include <tuple>

#include "app/ui/host_lanes.h"
#include "app/ui/loaded_run.h"

namespace ddpscope::ui {

std::vector<SearchMatch> findMatches(const LoadedRun& run, const QRegularExpression& re) {
  std::vector<SearchMatch> out;
  if (!re.isValid() || re.pattern().isEmpty()) return out;
  // Each name of a rank once: 0 unknown, 1 no match, 2 match.
  std::vector<std::vector<std::uint8_t>> named(run.run.ranks.size());
  for (std::size_t r = 0; r < named.size(); ++r)
    named[r].assign(run.run.ranks[r].names.size(), 0);
  for (const Lane& lane : run.timeline.lanes) {
    if (lane.track < 0) continue;
    // A host thread's events once, at its first row; a GPU track's by the lane drawing them.
    if (lane.kind == LaneKind::Host
            ? lane.depth != 0
            : lane.kind != LaneKind::Stream && lane.kind != LaneKind::GpuAnnotation)
      continue;
    const auto ri = static_cast<std::size_t>(lane.rank_index);
    const auto& rank = run.run.ranks[ri];
    const auto& t = rank.tracks[static_cast<std::size_t>(lane.track)];
    const std::size_t first = out.size();
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto kind = t.kind_of[i];
      if (lane.kind == LaneKind::Stream && !trace::isGpuActivity(kind)) continue;
      if (lane.kind == LaneKind::GpuAnnotation && kind != trace::EventKind::GpuAnnotation) continue;
      auto& m = named[ri][t.name[i]];
      if (m == 0) m = re.match(QString::fromStdString(rank.names[t.name[i]])).hasMatch() ? 2 : 1;
      if (m == 2)
        out.push_back({lane.rank_index, lane.track, static_cast<std::uint32_t>(i), t.start[i],
                       t.end(i), lane.kind, 0});
    }
    if (lane.kind == LaneKind::Host && out.size() > first) {
      // The row of each host match: its depth of nesting, deeper ones on the last row.
      const std::vector<std::uint16_t> depth = nestingDepths(t);
      for (std::size_t k = first; k < out.size(); ++k)
        out[k].row = static_cast<std::int16_t>(std::min<int>(depth[out[k].index], lane.rows - 1));
    }
  }
  std::sort(out.begin(), out.end(), [](const SearchMatch& a, const SearchMatch& b) {
    return std::tie(a.start, a.rank_index, a.track, a.index) <
           std::tie(b.start, b.rank_index, b.track, b.index);
  });
  return out;
}

namespace {
// Enter / Shift+Enter in the field go to the next / previous match.
class SearchField : public QLineEdit {
 public:
  using QLineEdit::QLineEdit;
  std::function<void(bool backwards)> on_enter;

 protected:
  void keyPressEvent(QKeyEvent* e) override {
    if ((e->key() == Qt::Key_Return || e->key() == Qt::Key_Enter) && on_enter) {
      on_enter((e->modifiers() & Qt::ShiftModifier) != 0);
      return;
    }
    QLineEdit::keyPressEvent(e);
  }
};
}  // namespace

SearchBar::SearchBar(QWidget* parent)
    : QWidget(parent),
      field_(new SearchField(this)),
      prev_(new QToolButton(this)),
      next_(new QToolButton(this)),
      count_(new QLabel(this)),
      step_(new QSpinBox(this)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(4, 2, 4, 2);
  layout->setSpacing(4);
  field_->setPlaceholderText(
      tr("Search kernels, CPU ops, annotations, runtime calls (regular expression, Ctrl+F)"));
  field_->setClearButtonEnabled(true);
  field_->setToolTip(
      tr("A regular expression over the names of the events drawn: kernels, copies, sets and "
         "synchronisations in the stream lanes, GPU annotations, and the host lanes' CPU ops, "
         "user annotations and CUDA runtime/driver calls (a match in a collapsed thread opens "
         "it); Enter: next match, Shift+Enter: previous"));
  prev_->setText(QStringLiteral("▲"));
  prev_->setToolTip(tr("Previous match (Shift+Enter)"));
  next_->setText(QStringLiteral("▼"));
  next_->setToolTip(tr("Next match (Enter)"));
  count_->setMinimumWidth(90);
  auto* step_label = new QLabel(tr("Go to step"), this);
  step_->setRange(0, 0);
  step_->setEnabled(false);
  step_->setToolTip(tr("Zoom the timeline to this step (Enter)"));
  auto* go = new QToolButton(this);
  go->setText(tr("Go"));
  layout->addWidget(field_, 3);
  layout->addWidget(prev_);
  layout->addWidget(next_);
  layout->addWidget(count_);
  layout->addStretch(1);
  layout->addWidget(step_label);
  layout->addWidget(step_);
  layout->addWidget(go);

  auto* typing = new QTimer(this);
  typing->setSingleShot(true);
  typing->setInterval(250);
  connect(field_, &QLineEdit::textChanged, typing, qOverload<>(&QTimer::start));
  connect(typing, &QTimer::timeout, this, [this] { emit searchChanged(field_->text()); });
  static_cast<SearchField*>(field_)->on_enter = [this, typing](bool backwards) {
    if (typing->isActive()) {  // the pattern first, then move
      typing->stop();
      emit searchChanged(field_->text());
    }
    if (backwards) {
      emit previousRequested();
    } else {
      emit nextRequested();
    }
  };
  connect(prev_, &QToolButton::clicked, this, &SearchBar::previousRequested);
  connect(next_, &QToolButton::clicked, this, &SearchBar::nextRequested);
  connect(go, &QToolButton::clicked, this, [this] { emit stepRequested(step_->value()); });
  connect(step_, &QSpinBox::editingFinished, this, [this] {
    if (step_->hasFocus()) emit stepRequested(step_->value());
  });
}

QString SearchBar::countText() const {
  return count_->text();
}

void SearchBar::showCount(int current, std::size_t total) {
  count_->setToolTip({});
  if (total == 0) {
    count_->setText(tr("no match"));
  } else if (current < 0) {
    count_->setText(tr("%1 matches").arg(total));
  } else {
    count_->setText(QStringLiteral("%1 / %2").arg(current + 1).arg(total));
  }
}

void SearchBar::clearCount() {
  count_->clear();
  count_->setToolTip({});
}

void SearchBar::setPattern(const QString& pattern) {
  if (field_->text() == pattern) return;
  field_->blockSignals(true);
  field_->setText(pattern);
  field_->blockSignals(false);
}

void SearchBar::showError(const QString& message) {
  count_->setText(tr("invalid expression"));
  count_->setToolTip(message);
}

void SearchBar::setStepRange(int lo, int hi) {
  step_->setEnabled(lo <= hi);
  step_->setRange(lo, std::max(lo, hi));
}

void SearchBar::focusStep() {
  step_->setFocus();
  step_->selectAll();
}

}  // namespace ddpscope::ui
