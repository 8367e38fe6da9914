#include "app/ui/digest_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QStandardItemModel>
#include <QVBoxLayout>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "app/ui/digest_heatmap.h"
#include "app/ui/format.h"
#include "app/ui/palette.h"
#include "app/ui/run_text.h"

namespace ddpscope::ui {

namespace {
// Ranks whose warnings are quoted under the headline; the rest are counted.
constexpr int kRankWarningExamples = 3;
constexpr analysis::DigestFigure kFigures[analysis::kDigestFigureCount] = {
    analysis::DigestFigure::StepTime, analysis::DigestFigure::ExposedComm,
    analysis::DigestFigure::MatchedWait};

// The scale's hue: step time in the computation blue, the communication figures in vermillion.
QColor hueOf(analysis::DigestFigure f) {
  return f == analysis::DigestFigure::StepTime ? colours::kCompute : colours::kCommExposed;
}

QLabel* noteLabel(QWidget* parent) {
  auto* l = new QLabel(parent);
  l->setWordWrap(true);
  l->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return l;
}
}  // namespace

QString rankListText(const std::vector<std::int32_t>& ranks) {
  QStringList parts;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
      ++j;
    parts << (j == i ? QString::number(ranks[i])
                     : QStringLiteral("%1–%2").arg(ranks[i]).arg(ranks[j]));
    i = j + 1;
  }
  return parts.join(QStringLiteral(", "));
}

std::optional<std::vector<std::int32_t>> parseRankList(const QString& text, QString* error) {
  static const QRegularExpression item(QStringLiteral("^\\s*(\\d+)\\s*(?:[-–]\\s*(\\d+)\\s*)?$"));
  std::set<std::int32_t> ranks;
  for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    const auto m = item.match(part);
    bool ok_a = false, ok_b = true;
    const int a = m.hasMatch() ? m.captured(1).toInt(&ok_a) : 0;
    const int b = m.hasMatch() && m.hasCaptured(2) ? m.captured(2).toInt(&ok_b) : a;
    if (!m.hasMatch() || !ok_a || !ok_b || b < a || b - a > 1'000'000) {
      if (error) *error = QObject::tr("'%1' is not a rank or a range of ranks").arg(part.trimmed());
      return std::nullopt;
    }
    for (int r = a; r <= b; ++r)
      ranks.insert(r);
  }
  if (ranks.empty()) {
    if (error) *error = QObject::tr("no rank selected");
    return std::nullopt;
  }
  return std::vector<std::int32_t>(ranks.begin(), ranks.end());
}

DigestView::DigestView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 4, 6, 4);
  title_ = noteLabel(this);
  title_->setTextFormat(Qt::PlainText);
  QFont bold = title_->font();
  bold.setBold(true);
  title_->setFont(bold);
  headline_ = noteLabel(this);
  headline_->setTextFormat(Qt::PlainText);
  late_ = noteLabel(this);
  late_->setTextFormat(Qt::PlainText);
  warnings_ = noteLabel(this);
  warnings_->setTextFormat(Qt::PlainText);
  warnings_->setStyleSheet(QStringLiteral("QLabel{color:%1;}").arg(colours::kWarningText.name()));
  figure_ = new QComboBox(this);
  figure_->setObjectName(QStringLiteral("digestFigure"));
  for (auto f : kFigures) {
    figure_->addItem(QString::fromUtf8(analysis::digestFigureName(f)), static_cast<int>(f));
    figure_->setItemData(figure_->count() - 1,
                         QString::fromUtf8(analysis::digestFigureDefinition(f)), Qt::ToolTipRole);
  }
  ranks_ = new QLineEdit(this);
  ranks_->setObjectName(QStringLiteral("digestRanks"));
  ranks_->setPlaceholderText(tr("ranks, e.g. 0–3, 7 (or drag over the heatmap)"));
  load_ = new QPushButton(tr("Load ranks"), this);
  add_folder_ = new QPushButton(tr("Trace folders…"), this);
  add_folder_->setObjectName(QStringLiteral("digestAddFolder"));
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("figure"), this));
  controls->addWidget(figure_);
  controls->addSpacing(16);
  controls->addWidget(new QLabel(tr("ranks"), this));
  controls->addWidget(ranks_, 1);
  controls->addWidget(load_);
  controls->addWidget(add_folder_);
  heatmap_ = new DigestHeatmap(this);
  figure_note_ = noteLabel(this);
  figure_note_->setTextFormat(Qt::PlainText);
  figure_note_->setStyleSheet(QStringLiteral("QLabel{color:%1;}").arg(colours::kLabelGrey.name()));
  layout->addWidget(title_);
  layout->addWidget(headline_);
  layout->addWidget(late_);
  layout->addWidget(warnings_);
  layout->addLayout(controls);
  layout->addWidget(figure_note_);
  layout->addWidget(heatmap_, 1);
  connect(figure_, &QComboBox::currentIndexChanged, this, [this] { showFigure(); });
  connect(heatmap_, &DigestHeatmap::ranksSelected, this,
          [this](const std::vector<std::int32_t>& ranks) { ranks_->setText(rankListText(ranks)); });
  connect(load_, &QPushButton::clicked, this, &DigestView::loadSelected);
  connect(add_folder_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(
        this, tr("A folder with more of this run's trace files"), folders_.value(0));
    if (!dir.isEmpty()) addTraceFolder(dir);
  });
  connect(ranks_, &QLineEdit::returnPressed, this, &DigestView::loadSelected);
  setDigest(nullptr, QString(), QStringList());
}

void DigestView::setDigest(std::shared_ptr<const analysis::Digest> digest, const QString& name,
                           const QStringList& folders) {
  digest_ = std::move(digest);
  name_ = name;
  folders_ = folders;
  updateFolderTip();
  ranks_->clear();
  const bool any = digest_ != nullptr;
  figure_->setEnabled(any);
  ranks_->setEnabled(any);
  load_->setEnabled(any);
  add_folder_->setEnabled(any);
  if (!any) {
    title_->setText(
        tr("No digest open. Open one (File ▸ Open files…) written by "
           "`ddpscope-cli digest`, or open a run folder of many ranks."));
    headline_->clear();
    late_->clear();
    warnings_->clear();
    heatmap_->setRowNotes({});
    heatmap_->setGrid({}, colours::kCompute);
    showFigure();
    return;
  }
  const auto& d = *digest_;
  QString source = d.ranks.empty() ? QString() : sourceBadge(d.ranks.front().source);
  // As a loaded run's badge (analysis::Completeness::incomplete): a trace cut short, or ranks of
  // the world without one when several ranks were read or ddpscope recorded them (one imported
  // rank of a larger job is how PyTorch profiles are shared, and says "1 of W ranks").
  const bool recorded_by_ddpscope = std::any_of(
      d.ranks.begin(), d.ranks.end(),
      [](const analysis::DigestRank& r) { return r.source == "sim" || r.source == "cuda"; });
  if ((!d.run.missing_ranks.empty() && (d.ranks.size() > 1 || recorded_by_ddpscope)) ||
      std::any_of(d.ranks.begin(), d.ranks.end(),
                  [](const analysis::DigestRank& r) { return r.incomplete; }))
    source += QStringLiteral(" · ") + kIncompleteBadge;
  title_->setText(tr("%1 · DIGEST · %2 · %3 of %4 ranks")
                      .arg(name_, source)
                      .arg(d.run.ranks)
                      .arg(d.run.world_size));
  const auto fig = analysis::runFigureText(d.run);
  headline_->setText(
      tr("step %1 · overlap %2 · exposed %3 · DP efficiency %4 · GPU idle %5 — %6")
          .arg(QString::fromStdString(fig.step), QString::fromStdString(fig.overlap),
               QString::fromStdString(fig.exposed), QString::fromStdString(fig.dp_efficiency),
               QString::fromStdString(fig.gpu_idle), QString::fromStdString(fig.scope)));
  // The late rank as the run's traces name it (recorded when the digest was made), then the
  // exposed split as the app's headline gives it.
  const auto late = analysis::digestStragglers(d);
  // Ranks of the world without a trace may be the late one: their peers' waits for it are then
  // not told from transfer, and no skew among the ranks read says who it was.
  const QString missing = rankListText(d.run.missing_ranks);
  const QString missing_ranks =
      d.run.missing_ranks.size() == 1 ? tr("rank %1").arg(missing) : tr("ranks %1").arg(missing);
  QString late_text;
  if (!missing.isEmpty() && !late.late_rank)
    late_text = tr("No late rank can be named: the digest has no trace of %1 of the world, and "
                   "the late rank may be among them")
                    .arg(missing_ranks);
  else if (d.matched_collectives == 0)
    late_text = d.ranks.size() == 1
                    ? tr("No late rank: collectives are matched across ranks, and the digest "
                         "has one rank")
                    : tr("No late rank: no collective was matched across the ranks");
  else if (!late.late_known)
    late_text =
        tr("Late rank: not recorded (the digest was made before ddpscope kept it: make it "
           "again to see it)");
  else if (late.late_rank)
    late_text =
        tr("Late rank: rank %1, the last to start at %2 of the %3 matched collectives "
           "with a skew")
            .arg(*late.late_rank)
            .arg(late.late_count)
            .arg(late.skewed) +
        (missing.isEmpty()
             ? QString()
             : tr(" (among the ranks with a trace; %1 of the world %2 no trace, and a "
                  "later rank may be among them)")
                   .arg(missing_ranks, d.run.missing_ranks.size() == 1 ? tr("has") : tr("have")));
  else if (late.skewed > 0)
    late_text = tr("No late rank: no rank was the last to start at more than half of the %1 "
                   "matched collectives with a skew")
                    .arg(late.skewed);
  else if (d.run.first_quiet_rank >= 0)
    // A hang's collective never ended, so no trace recorded it: the late rank is the one that
    // went quiet, said on the line below, not one of the collectives recorded.
    late_text =
        tr("No late rank in the collectives the traces recorded (one that never ended is "
           "not recorded)");
  else
    late_text = tr("No late rank: no matched collective had a skew");
  if (const QString split = stragglerText(late, false); !split.isEmpty())
    late_text += QStringLiteral("\n") + split;
  if (const QString quiet = firstQuietText(d.run); !quiet.isEmpty())
    late_text += QStringLiteral("\n") + quiet;
  late_->setText(late_text);
  QStringList warnings;
  for (const auto& w : d.warnings)
    warnings << QString::fromStdString(w);
  // The ranks' own warnings: each on its row's hover, and a count with the first few here (a run
  // of a thousand ranks could fill the tab).
  std::map<std::int32_t, QString> notes;
  QStringList examples;
  int warned = 0;
  for (const auto& r : d.ranks) {
    QStringList own;
    for (const auto& w : r.warnings)
      own << tr("⚠ %1").arg(QString::fromStdString(w));
    if (!own.isEmpty()) notes[r.rank] = own.join(QLatin1Char('\n'));
    if (r.warnings.empty()) continue;
    ++warned;
    if (examples.size() < kRankWarningExamples)
      examples << QString::fromStdString(analysis::rankWarning(r.rank, r.warnings.front())) +
                      (r.warnings.size() > 1 ? tr(" (and %1 more)").arg(r.warnings.size() - 1)
                                             : QString());
  }
  heatmap_->setRowNotes(std::move(notes));
  if (warned > 0)
    warnings << (warned == 1 ? tr("1 rank with warnings of its own")
                             : tr("%1 ranks with warnings of their own").arg(warned)) +
                    tr(" (hover a rank's row for all of them): ") +
                    examples.join(QStringLiteral("; ")) +
                    (warned > examples.size() ? QStringLiteral("; …") : QString());
  warnings_->setText(warnings.join(QLatin1Char('\n')));
  warnings_->setVisible(!warnings.isEmpty());
  // A figure with no value anywhere cannot be chosen.
  auto* model = qobject_cast<QStandardItemModel*>(figure_->model());
  for (int i = 0; i < analysis::kDigestFigureCount; ++i)
    if (model) model->item(i)->setEnabled(analysis::digestGrid(d, kFigures[i]).max_ns.has_value());
  if (model && !model->item(figure_->currentIndex())->isEnabled()) {
    const QSignalBlocker quiet(figure_);
    figure_->setCurrentIndex(0);  // step time: every step has one
  }
  showFigure();
}

bool DigestView::setFigure(analysis::DigestFigure figure) {
  const int index = figure_->findData(static_cast<int>(figure));
  const auto* model = qobject_cast<QStandardItemModel*>(figure_->model());
  if (index < 0 || (model && !model->item(index)->isEnabled())) return false;
  figure_->setCurrentIndex(index);
  showFigure();
  return true;
}

QString DigestView::exportTitle() const {
  if (!digest_) return {};
  // Short lines, for a slide: the headline's figures and the steps they cover on two lines.
  QString headline = headline_->text();
  if (const auto at = headline.indexOf(QStringLiteral(" — ")); at >= 0)
    headline = headline.left(at) + QStringLiteral("\n") + headline.mid(at + 3);
  QString title = title_->text() + QStringLiteral("\n") + figure_->currentText() +
                  tr(" per rank (rows) and step (columns)") +
                  (static_cast<analysis::DigestFigure>(figure_->currentData().toInt()) ==
                           analysis::DigestFigure::MatchedWait
                       ? tr(", hidden under compute or not")
                       : QString()) +
                  (digest_->run.missing_ranks.empty() ? QString() : tr("; grey rows: no trace")) +
                  QStringLiteral("\n") + headline;
  if (!late_->text().isEmpty()) title += QStringLiteral("\n") + late_->text();
  // A slide says that the digest warns (a missing rank, unmatched collectives), as the run's
  // figures do with their warning count.
  std::size_t warned = digest_->warnings.size();
  for (const auto& r : digest_->ranks)
    warned += r.warnings.size();
  if (warned > 0)
    title += QStringLiteral("\n⚠ ") + warningCount(static_cast<qsizetype>(warned)) +
             tr(" in the digest (the Digest tab shows them, each rank's on its row)");
  return title;
}

bool DigestView::exportChart(const QString& path, double scale, QString* error) {
  if (!digest_) {
    if (error) *error = tr("no digest is open in the Digest tab");
    return false;
  }
  // Rows of at least 2 pixels up to a few hundred ranks; a thousand ranks fit a slide's height.
  const int rows = static_cast<int>(heatmap_->grid().ranks.size());
  return exportTitledChart(heatmap_->plot(), exportTitle(), path, scale, error, 1100,
                           std::clamp(rows * 4 + 160, 420, 900));
}

void DigestView::showFigure() {
  const auto f = static_cast<analysis::DigestFigure>(figure_->currentData().toInt());
  QString note;
  if (digest_) {
    heatmap_->setGrid(analysis::digestGrid(*digest_, f), hueOf(f));
    note = QString::fromUtf8(analysis::digestFigureDefinition(f));
    if (!digest_->run.missing_ranks.empty())
      note += tr(" Grey rows: ranks of the world the digest has no trace of.");
  }
  figure_note_->setText(note);
  figure_note_->setVisible(!note.isEmpty());
}

QString DigestView::figureNoteText() const {
  return figure_note_->text();
}

QString DigestView::headlineText() const {
  return headline_->text();
}
QString DigestView::warningsText() const {
  return warnings_->text();
}
QString DigestView::lateRankText() const {
  return late_->text();
}
QString DigestView::rankSelectionText() const {
  return ranks_->text();
}
void DigestView::setRankSelectionText(const QString& text) {
  ranks_->setText(text);
}

void DigestView::addTraceFolder(const QString& folder) {
  if (!folders_.contains(folder)) folders_ << folder;
  updateFolderTip();
}

void DigestView::updateFolderTip() {
  const QString list = folders_.isEmpty() ? tr("(none)") : folders_.join(QStringLiteral("\n"));
  load_->setToolTip(
      tr("Open these ranks' trace files as a run: the files the digest names, looked for in "
         "these folders and their subfolders:\n%1")
          .arg(list));
  add_folder_->setToolTip(tr("Add a folder that holds more of the run's trace files (e.g. "
                             "another node's); looked for in:\n%1")
                              .arg(list));
}

void DigestView::loadSelected() {
  if (!digest_) return;
  QString error;
  const auto ranks = parseRankList(ranks_->text(), &error);
  if (!ranks) {
    emit loadFailed(tr("Ranks to load: %1").arg(error));
    return;
  }
  std::vector<std::string> folders;
  for (const auto& f : folders_)
    folders.push_back(f.toStdString());
  QStringList paths;
  try {
    for (const auto& f : analysis::digestRankFiles(*digest_, folders, *ranks))
      paths << QString::fromStdString(f);
  } catch (const std::exception& e) {
    emit loadFailed(QString::fromStdString(e.what()));
    return;
  }
  emit loadRequested(paths, rankListText(*ranks));
}

}  // namespace ddpscope::ui
