#include "app/ui/details_panel.h"

#include <QLocale>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "app/analysis/classify.h"
#include "app/ui/palette.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

namespace {
QString row(const QString& key, const QString& value) {
  return QStringLiteral(
             "<tr><td style='color:gray;padding-right:14px'>%1</td><td align='right'>%2</td></tr>")
      .arg(key, value.toHtmlEscaped());
}
}  // namespace

DetailsPanel::DetailsPanel(Session* session, QWidget* parent)
    : QWidget(parent), session_(session), view_(new QTextBrowser(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(view_);
  connect(session_, &Session::eventSelected, this, &DetailsPanel::refresh);
  connect(session_, &Session::currentRunChanged, this, &DetailsPanel::refresh);
  refresh();
}

QString DetailsPanel::text() const {
  return view_->toPlainText();
}

void DetailsPanel::refresh() {
  const auto run = session_->current();
  const auto& ref = session_->selectedEvent();
  if (!run || !ref) {
    view_->setHtml(
        tr("<p style='color:gray'>Click a kernel on the timeline to see its details here.</p>"));
    return;
  }
  const auto& rank = run->run.ranks[static_cast<std::size_t>(ref->rank_index)];
  const auto& t = rank.tracks[static_cast<std::size_t>(ref->track)];
  const std::size_t i = ref->index;
  const auto& overlap = run->overlap[static_cast<std::size_t>(ref->rank_index)];
  const std::string& name = rank.names[t.name[i]];
  const auto cls = analysis::classify(t.kind_of[i], name);
  const TimeNs s = t.start[i], e = t.end(i), dur = t.dur[i];
  QString html =
      QStringLiteral(
          "<h3 style='margin:2px'>%1</h3><p style='color:gray;margin:2px'>%2 · %3</p><table>")
          .arg(QString::fromStdString(name).toHtmlEscaped(),
               QString::fromUtf8(analysis::className(cls).data()), sourceBadge(run->source()));
  html += row(tr("rank"), QString::number(rank.rank));
  html += row(tr("device · stream"), QStringLiteral("%1 · %2").arg(t.device()).arg(t.stream()));
  auto exact = [](TimeNs ns) {  // the rounded time, then every digit (µs with ns digits)
    return QStringLiteral("%1  (%2 µs)")
        .arg(formatTime(ns), QString::number(static_cast<double>(ns) / 1e3, 'f', 3));
  };
  html += row(tr("start"), exact(s));
  html += row(tr("end"), exact(e));
  html += row(tr("duration"), formatTime(dur));
  if (t.correlation[i] != trace::kNoCorrelation)
    html += row(tr("correlation"), QString::number(t.correlation[i]));
  if (t.step[i] != trace::kNoStep) html += row(tr("step"), QString::number(t.step[i]));
  if (t.bucket[i] != trace::kNoBucket) html += row(tr("bucket"), QString::number(t.bucket[i]));
  if (t.bytes[i] >= 0) {
    html += row(tr("bytes"), QLocale().toString(static_cast<qlonglong>(t.bytes[i])));
    for (const auto& [label, value] : bandwidthRows(
             t.bytes[i], dur, cls == analysis::ActivityClass::Communication, name, rank.world_size))
      html += row(label, value);
  }
  if (dur > 0) {
    if (cls == analysis::ActivityClass::Communication) {
      // A comm kernel lies inside the rank's communication (the analysis classifies kernels
      // by name as classify does), so only the hidden part of it can be under compute.
      const TimeNs hidden = overlap.computeWithinComm(s, e);
      html +=
          row(tr("hidden under compute"),
              QStringLiteral("%1 (%2)").arg(
                  formatTime(hidden),
                  formatPct(100.0 * static_cast<double>(hidden) / static_cast<double>(dur), 1)));
      html += row(tr("exposed"), formatTime(dur - hidden));
    } else if (cls == analysis::ActivityClass::Computation) {
      const TimeNs comm = overlap.commWithin(s, e);
      html += row(tr("communication running alongside"),
                  QStringLiteral("%1 (%2)").arg(
                      formatTime(comm),
                      formatPct(100.0 * static_cast<double>(comm) / static_cast<double>(dur), 1)));
    }
  }
  view_->setHtml(html + QStringLiteral("</table>"));
}

}  // namespace ddpscope::ui
