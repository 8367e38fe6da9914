#include "app/ui/details_panel.h"

#include <QLocale>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <algorithm>
#include <optional>

#include "app/analysis/classify.h"
#include "app/analysis/launches.h"
#include "app/ui/format.h"
#include "app/ui/host_lanes.h"
#include "app/ui/palette.h"
#include "app/ui/run_text.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

namespace {
QString row(const QString& key, const QString& value) {
  return QStringLiteral(
             "<tr><td style='color:%1;padding-right:14px'>%2</td><td align='right'>%3</td></tr>")
      .arg(colours::kLabelGrey.name(), key, value.toHtmlEscaped());
}

// The rounded time, then every digit (µs with ns digits).
QString exactTime(TimeNs ns) {
  return QStringLiteral("%1  (%2 µs)")
      .arg(formatTime(ns), QString::number(static_cast<double>(ns) / 1e3, 'f', 3));
}

// "12.3 µs (45.60 %)": a part of an event's duration and its share of it.
QString partOf(TimeNs part, TimeNs dur) {
  return QStringLiteral("%1 (%2)").arg(
      formatTime(part), formatPct(100.0 * static_cast<double>(part) / static_cast<double>(dur), 1));
}

// What a trace says of event `i` of track `t`: its rank, stream, times, correlation, step,
// bucket, bytes and bandwidth (of a collective of `kind`, over `transfer_ns` when known).
QString traceRows(const trace::RankTrace& rank, const trace::Track& t, std::size_t i,
                  analysis::ActivityClass cls, analysis::CollectiveKind kind,
                  std::optional<TimeNs> transfer_ns) {
  const TimeNs dur = t.dur[i];
  QString html = row(QObject::tr("rank"), QString::number(rank.rank));
  if (const auto s = rank.kernelShortName(t.name[i]); !s.empty())  // Nsight's kernel short name
    html += row(QObject::tr("short name"), QString::fromUtf8(s.data(), qsizetype(s.size())));
  html += row(QObject::tr("device · stream"),
              QStringLiteral("%1 · %2")
                  .arg(t.device())
                  .arg(QString::fromStdString(analysis::streamText(t.stream()))));
  html += row(QObject::tr("start"), exactTime(t.start[i]));
  html += row(QObject::tr("end"), exactTime(t.end(i)));
  html += row(QObject::tr("duration"), formatTime(dur));
  if (t.correlation[i] != trace::kNoCorrelation)
    html += row(QObject::tr("correlation"), QString::number(t.correlation[i]));
  if (t.step[i] != trace::kNoStep) html += row(QObject::tr("step"), QString::number(t.step[i]));
  if (t.bucket[i] != trace::kNoBucket)
    html += row(QObject::tr("bucket"), QString::number(t.bucket[i]));
  if (t.bytes[i] >= 0) {
    html += row(QObject::tr("bytes"), QLocale().toString(static_cast<qlonglong>(t.bytes[i])));
    for (const auto& [label, value] : bandwidthRows(
             t.bytes[i], dur, cls == analysis::ActivityClass::Communication, kind,
             analysis::collectiveRanks(rank.collectiveArgs(t.correlation[i]), rank.world_size),
             rank.world_size, transfer_ns))
      html += row(label, value);
  }
  return html;
}

// How much of the event overlaps the other class of work on its rank: for a comm kernel, the
// part hidden under compute; for a compute kernel, the communication running alongside.
QString overlapRows(const RankOverlap& overlap, TimeNs s, TimeNs e, TimeNs dur,
                    analysis::ActivityClass cls) {
  if (dur <= 0) return {};
  if (cls == analysis::ActivityClass::Communication) {
    // A comm kernel lies inside the rank's communication (the analysis classifies kernels
    // by name as classify does), so only the hidden part of it can be under compute.
    const TimeNs hidden = overlap.computeWithinComm(s, e);
    return row(QObject::tr("hidden under compute"), partOf(hidden, dur)) +
           row(QObject::tr("exposed"), formatTime(dur - hidden));
  }
  if (cls == analysis::ActivityClass::Computation)
    return row(QObject::tr("communication running alongside"),
               partOf(overlap.commWithin(s, e), dur));
  return {};
}
// The collective matched across ranks whose kernel on rank `rank_index` is event `row` of track
// `track`, or null (the analysis names each rank's kernel of a matched collective).
const analysis::MatchedCollective* matchedCollective(const analysis::RunReport& report,
                                                     std::size_t rank_index, std::int32_t track,
                                                     std::int64_t row) {
  const analysis::EventRef ref{track, row};
  for (const auto& m : report.matched) {
    if (m.involves(rank_index) && m.events[rank_index] == ref) return &m;
  }
  return nullptr;
}

// The matched collective of a communication kernel: its skew, the rank that started last, and
// this rank's wait for it and transfer after it (docs/METRICS.md "Matched collectives").
QString matchedRows(const analysis::RunReport& report, std::size_t rank_index, std::int32_t track,
                    std::int64_t event) {
  if (report.matched.empty()) return {};
  const auto* m = matchedCollective(report, rank_index, track, event);
  if (!m) return row(QObject::tr("matched across ranks"), QObject::tr("no"));
  const auto kind_name = analysis::collectiveKindName(m->kind);
  const QString number =
      m->seq >= 0 ? QObject::tr("seq %1").arg(m->seq) : QObject::tr("#%1").arg(m->index);
  const QString group = m->group.empty()
                            ? QString()
                            : QObject::tr(" of group %1").arg(QString::fromStdString(m->group));
  QString html =
      row(QObject::tr("matched across ranks"),
          QObject::tr("%1 %2%3, by %4")
              .arg(QString::fromUtf8(kind_name.data(), static_cast<qsizetype>(kind_name.size())),
                   number, group, QString::fromStdString(report.matched_by)));
  const auto text = matchedCollectiveText(report, *m);
  html += row(QObject::tr("skew"),
              formatTime(m->skew_ns) +
                  (text.split_known ? QString() : QObject::tr(" (among the loaded ranks)")));
  html += row(QObject::tr("late rank"), text.late_rank);
  if (!text.split_known) {
    html += row(QObject::tr("wait, transfer (this rank)"), text.split_unknown);
    return html;
  }
  const TimeNs dur = m->wait_ns[rank_index] + m->transfer_ns[rank_index];  // the kernel's
  html += row(QObject::tr("wait (this rank)"), partOf(m->wait_ns[rank_index], dur));
  html += row(QObject::tr("transfer (this rank)"), partOf(m->transfer_ns[rank_index], dur));
  return html;
}

// "aten::mm (cudaLaunchKernel) on thread T at t (launch latency x)": the host call that
// launched GPU work, named by the CPU op it ran in (METRICS.md "Launches").
QString launchedBy(const trace::RankTrace& rank, const analysis::LaunchLink& l) {
  const auto& host = rank.tracks[static_cast<std::size_t>(l.host_track)];
  const auto& gpu = rank.tracks[static_cast<std::size_t>(l.gpu_track)];
  const QString call = QString::fromStdString(rank.names[host.name[l.host_index]]);
  const std::int64_t op = enclosingRange(host, l.host_index);
  const QString who =
      op < 0
          ? call
          : QStringLiteral("%1 (%2)").arg(
                QString::fromStdString(rank.names[host.name[static_cast<std::size_t>(op)]]), call);
  return QObject::tr("%1 on %2 at %3 (launch latency %4)")
      .arg(who, QString::fromStdString(hostThreadLabel(rank, host)),
           formatTime(host.start[l.host_index]),
           formatTime(analysis::launchLatency(host.start[l.host_index], gpu.start[l.gpu_index])));
}

// A range of a host thread: a CPU op, an annotation, a runtime call (with what it launched).
QString hostDetails(const LoadedRun& run, std::int32_t rank_index, std::int32_t track,
                    const trace::Track& t, std::size_t i) {
  const auto& rank = run.run.ranks[static_cast<std::size_t>(rank_index)];
  const auto cat = trace::categoryName(t.kind_of[i]);
  QString html =
      QStringLiteral(
          "<h3 style='margin:2px'>%1</h3><p style='color:%2;margin:2px'>host · %3 · %4</p><table>")
          .arg(QString::fromStdString(rank.names[t.name[i]]).toHtmlEscaped(),
               colours::kLabelGrey.name(),
               cat.empty() ? QObject::tr("other") : QString::fromUtf8(cat.data(), cat.size()),
               sourceBadge(run.source()));
  html += row(QObject::tr("rank"), QString::number(rank.rank));
  // The tid as the lanes show it, and as the trace wrote it when that differs (a signed 32-bit id).
  const QString tid = QString::fromStdString(threadIdText(t.tid));
  html +=
      row(QObject::tr("thread"), QStringLiteral("%1 (pid %2, tid %3)")
                                     .arg(QString::fromStdString(hostThreadLabel(rank, t)))
                                     .arg(t.pid)
                                     .arg(tid == QString::number(t.tid)
                                              ? tid
                                              : QObject::tr("%1, written %2").arg(tid).arg(t.tid)));
  html += row(QObject::tr("start"), exactTime(t.start[i]));
  html += row(QObject::tr("end"), exactTime(t.end(i)));
  html += row(QObject::tr("duration"), formatTime(t.dur[i]));
  if (t.correlation[i] != trace::kNoCorrelation)
    html += row(QObject::tr("correlation"), QString::number(t.correlation[i]));
  if (const std::int64_t op = enclosingRange(t, i); op >= 0)
    html += row(QObject::tr("inside"),
                QString::fromStdString(rank.names[t.name[static_cast<std::size_t>(op)]]));
  const auto r = static_cast<std::size_t>(rank_index);
  if (r < run.timeline.launches.size()) {
    for (const auto& l : run.timeline.launches[r].launchesOf(rank, t.correlation[i], track,
                                                             static_cast<std::uint32_t>(i))) {
      const auto& g = rank.tracks[static_cast<std::size_t>(l.gpu_track)];
      html += row(QObject::tr("launched"),
                  QObject::tr("%1 on stream %2 at %3 (launch latency %4)")
                      .arg(QString::fromStdString(rank.names[g.name[l.gpu_index]]),
                           QString::fromStdString(analysis::streamText(g.stream())),
                           formatTime(g.start[l.gpu_index]),
                           formatTime(analysis::launchLatency(t.start[i], g.start[l.gpu_index]))));
    }
  }
  return html + QStringLiteral("</table>");
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
        tr("<p style='color:%1'>Click a kernel or a host range on the timeline to see its details "
           "here.</p>")
            .arg(colours::kLabelGrey.name()));
    return;
  }
  const auto& rank = run->run.ranks[static_cast<std::size_t>(ref->rank_index)];
  const auto& t = rank.tracks[static_cast<std::size_t>(ref->track)];
  const std::size_t i = ref->index;
  if (t.kind == trace::TrackKind::Host) {
    view_->setHtml(hostDetails(*run, ref->rank_index, ref->track, t, i));
    return;
  }
  const std::string& name = rank.names[t.name[i]];
  const auto c = run->rules->classify(t.kind_of[i], name, t.stream());
  const auto cls = c.cls;
  QString html =
      QStringLiteral(
          "<h3 style='margin:2px'>%1</h3><p style='color:%2;margin:2px'>%3 · %4</p><table>")
          .arg(QString::fromStdString(name).toHtmlEscaped(), colours::kLabelGrey.name(),
               QString::fromUtf8(analysis::className(cls).data()), sourceBadge(run->source()));
  html += traceRows(rank, t, i, cls, c.kind,
                    matchedTransferTime(*run, ref->rank_index, ref->track, ref->index));
  if (const auto r = static_cast<std::size_t>(ref->rank_index); r < run->timeline.launches.size()) {
    for (const auto& l : run->timeline.launches[r].links(rank, t.correlation[i])) {
      if (l.gpu_track != ref->track || l.gpu_index != i) continue;
      html += row(tr("launched by"), launchedBy(rank, l));
      break;
    }
  }
  if (c.kind != analysis::CollectiveKind::None)
    html += row(tr("collective"), QString::fromUtf8(analysis::collectiveKindName(c.kind).data()));
  if (c.rule >= 0)  // which rule classified it: a built-in one, or a line of the user's file
    html +=
        row(tr("classified by"),
            QString::fromStdString(run->rules->rules()[static_cast<std::size_t>(c.rule)].origin));
  if (cls == analysis::ActivityClass::Communication && t.dur[i] > 0)
    html += matchedRows(run->report, static_cast<std::size_t>(ref->rank_index), ref->track,
                        static_cast<std::int64_t>(i));
  html += overlapRows(run->overlap[static_cast<std::size_t>(ref->rank_index)], t.start[i], t.end(i),
                      t.dur[i], cls);
  view_->setHtml(html + QStringLiteral("</table>"));
}

}  // namespace ddpscope::ui
