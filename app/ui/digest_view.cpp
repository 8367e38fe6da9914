#include "app/ui/digest_view.h"

#include <QComboBox>
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

namespace ddpscope::ui {

namespace {
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
  for (auto f : kFigures)
    figure_->addItem(QString::fromUtf8(analysis::digestFigureName(f)), static_cast<int>(f));
  ranks_ = new QLineEdit(this);
  ranks_->setObjectName(QStringLiteral("digestRanks"));
  ranks_->setPlaceholderText(tr("ranks, e.g. 0–3, 7 (or drag over the heatmap)"));
  load_ = new QPushButton(tr("Load ranks"), this);
  load_->setToolTip(
      tr("Open these ranks' trace files as a run (the files the digest names, in "
         "its folder)"));
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(tr("figure"), this));
  controls->addWidget(figure_);
  controls->addSpacing(16);
  controls->addWidget(new QLabel(tr("ranks"), this));
  controls->addWidget(ranks_, 1);
  controls->addWidget(load_);
  heatmap_ = new DigestHeatmap(this);
  layout->addWidget(title_);
  layout->addWidget(headline_);
  layout->addWidget(late_);
  layout->addWidget(warnings_);
  layout->addLayout(controls);
  layout->addWidget(heatmap_, 1);
  connect(figure_, &QComboBox::currentIndexChanged, this, [this] { showFigure(); });
  connect(heatmap_, &DigestHeatmap::ranksSelected, this,
          [this](const std::vector<std::int32_t>& ranks) { ranks_->setText(rankListText(ranks)); });
  connect(load_, &QPushButton::clicked, this, &DigestView::loadSelected);
  connect(ranks_, &QLineEdit::returnPressed, this, &DigestView::loadSelected);
  setDigest(nullptr, QString(), QString());
}

void DigestView::setDigest(std::shared_ptr<const analysis::Digest> digest, const QString& name,
                           const QString& folder) {
  digest_ = std::move(digest);
  name_ = name;
  folder_ = folder;
  ranks_->clear();
  const bool any = digest_ != nullptr;
  figure_->setEnabled(any);
  ranks_->setEnabled(any);
  load_->setEnabled(any);
  if (!any) {
    title_->setText(
        tr("No digest open. Open one (File ▸ Open files…) written by "
           "`ddpscope-cli digest`, or open a run folder of many ranks."));
    headline_->clear();
    late_->clear();
    warnings_->clear();
    heatmap_->setGrid({}, colours::kCompute);
    return;
  }
  const auto& d = *digest_;
  const QString source = d.ranks.empty() ? QString() : sourceBadge(d.ranks.front().source);
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
  const auto late = analysis::digestLateRank(d);
  if (late.rank) {
    late_->setText(tr("Late rank: rank %1 waited least in %2 of the %3 steps compared; the other "
                      "ranks waited %4 per step for it (matched collectives)")
                       .arg(*late.rank)
                       .arg(late.late_steps)
                       .arg(late.steps_compared)
                       .arg(late.others_wait_ns ? formatTime(*late.others_wait_ns) : tr("n/a")));
  } else if (late.steps_compared > 0) {
    late_->setText(tr("No late rank: no rank waited least in more than half of the %1 steps "
                      "compared")
                       .arg(late.steps_compared));
  } else {
    late_->setText(tr("No late rank: the digest has no matched waits that differ between ranks"));
  }
  QStringList warnings;
  for (const auto& w : d.warnings)
    warnings << QString::fromStdString(w);
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

void DigestView::setFigure(analysis::DigestFigure figure) {
  figure_->setCurrentIndex(figure_->findData(static_cast<int>(figure)));
  showFigure();
}

void DigestView::showFigure() {
  if (!digest_) return;
  const auto f = static_cast<analysis::DigestFigure>(figure_->currentData().toInt());
  heatmap_->setGrid(analysis::digestGrid(*digest_, f), hueOf(f));
}

QString DigestView::headlineText() const {
  return headline_->text();
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

void DigestView::loadSelected() {
  if (!digest_) return;
  QString error;
  const auto ranks = parseRankList(ranks_->text(), &error);
  if (!ranks) {
    emit loadFailed(tr("Ranks to load: %1").arg(error));
    return;
  }
  std::vector<std::string> files;
  try {
    files = analysis::digestRankFiles(*digest_, folder_.toStdString(), *ranks);
  } catch (const std::exception& e) {
    emit loadFailed(QString::fromStdString(e.what()));
    return;
  }
  // Each file's size as the digest states it (the paths digestRankFiles gives).
  std::map<std::string, std::uint64_t> digest_bytes;
  for (const auto& r : digest_->ranks)
    if (r.file)
      digest_bytes[(std::filesystem::path(folder_.toStdString()) / r.file->name).string()] =
          r.file->bytes;
  QStringList paths;
  for (const auto& f : files) {
    const QString path = QString::fromStdString(f);
    const QFileInfo info(path);
    if (!info.isFile()) {
      emit loadFailed(tr("The trace file %1 is missing (the digest %2 names it; its traces are "
                         "looked for in the digest's folder)")
                          .arg(path, name_));
      return;
    }
    // A file of another size is not the one digested (its hash is not compared: that would read
    // every byte).
    if (const auto it = digest_bytes.find(f);
        it != digest_bytes.end() && static_cast<std::uint64_t>(info.size()) != it->second) {
      emit loadFailed(tr("The trace file %1 has changed since the digest %2 was made (%3 bytes; "
                         "the digest says %4): make the digest again")
                          .arg(path, name_)
                          .arg(info.size())
                          .arg(it->second));
      return;
    }
    paths << path;
  }
  emit loadRequested(paths, rankListText(*ranks));
}

}  // namespace ddpscope::ui
