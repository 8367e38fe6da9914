#include "app/ui/timeline_tooltip.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/analysis/classify.h"
#include "app/analysis/launches.h"
#include "app/ui/format.h"
#include "app/ui/host_lanes.h"
#include "app/ui/palette.h"
#include "app/ui/run_text.h"

namespace ddpscope::ui {

namespace {
QString row(const QString& key, const QString& value) {
  return QStringLiteral("<tr><td style='color:%1;padding-right:8px'>%2</td><td>%3</td></tr>")
      .arg(colours::kTooltipKey.name(), key, value.toHtmlEscaped());
}

// A box that merges several events: how many, their busy time, where the first starts.
QString mergedBoxTooltip(const Lane& lane, const DrawBox& box, std::optional<double> busy) {
  // Comm kernels are split into hidden/exposed pieces: count kernels, not pieces.
  std::vector<std::uint32_t> sources;
  sources.reserve(box.count);
  for (std::size_t i = box.first; i < box.first + box.count; ++i)
    sources.push_back(lane.events.source(i));
  std::sort(sources.begin(), sources.end());
  const auto distinct = std::unique(sources.begin(), sources.end()) - sources.begin();
  const QString what = lane.kind == LaneKind::Stream ? QStringLiteral("kernels")
                       : lane.kind == LaneKind::Host ? QStringLiteral("host ranges")
                                                     : QStringLiteral("events");
  const auto n = lane.kind == LaneKind::Stream ? distinct : box.count;
  QString html = QStringLiteral("<table>");
  html += QStringLiteral("<b>%1 %2, Σ %3</b>").arg(n).arg(what, formatTime(box.busy_ns));
  html += row("from", formatTime(lane.events.start(box.first)));
  if (busy)
    html += row("busy", formatPct(100.0 * *busy, 0) + QStringLiteral(" of the time shown here"));
  return html;
}

// A communication kernel's collective (`style`: its drawn style) and, when it was matched across
// ranks, the arrival skew, the rank that arrived last, and this rank's wait and transfer.
QString collectiveRows(const LoadedRun& run, const Lane& lane, std::uint32_t src,
                       std::uint8_t style) {
  if (!isCommKindStyle(style)) return {};
  QString html = row(
      "collective", QString::fromUtf8(analysis::collectiveKindName(commKindOfStyle(style)).data()));
  const std::int32_t j = matchedCollectiveOf(run.timeline, lane.rank_index, lane.track, src);
  if (j < 0) return html;
  const auto& m = run.report.matched[static_cast<std::size_t>(j)];
  const auto r = static_cast<std::size_t>(lane.rank_index);
  std::size_t ranks = 0;
  for (std::size_t k = 0; k < m.events.size(); ++k)
    ranks += m.involves(k) ? 1 : 0;
  QString which = m.seq >= 0 ? QStringLiteral("sequence %1").arg(m.seq)
                             : QStringLiteral("#%1 of its kind").arg(m.index);
  if (!m.group.empty()) which += QStringLiteral(", group %1").arg(QString::fromStdString(m.group));
  html += row("matched", QStringLiteral("%1 on %2 ranks").arg(which).arg(ranks));
  const auto text = matchedCollectiveText(run.report, m);
  html +=
      row("skew", formatTime(m.skew_ns) +
                      (text.split_known ? QString() : QStringLiteral(" (among the loaded ranks)")));
  html += row("late rank", text.late_rank);
  if (!text.split_known) return html + row("wait, transfer (this rank)", text.split_unknown);
  if (r < m.wait_ns.size()) html += row("wait (this rank)", formatTime(m.wait_ns[r]));
  if (r < m.transfer_ns.size()) html += row("transfer (this rank)", formatTime(m.transfer_ns[r]));
  return html;
}

// A kernel, copy or sync of a stream lane.
QString streamTooltip(const LoadedRun& run, const Lane& lane, const DrawBox& box) {
  const auto& rank = run.run.ranks[static_cast<std::size_t>(lane.rank_index)];
  const auto src = lane.events.source(box.first);
  const auto& t = rank.tracks[static_cast<std::size_t>(lane.track)];
  const TimeNs dur = t.dur[src];
  QString html = QStringLiteral("<b>%1</b><table>")
                     .arg(QString::fromStdString(rank.names[t.name[src]]).toHtmlEscaped());
  html += row("stream", QStringLiteral("%1 (%2) · gpu %3 · rank %4")
                            .arg(QString::fromStdString(analysis::streamText(lane.stream)))
                            .arg(QString::fromUtf8(analysis::streamRoleName(lane.role).data()))
                            .arg(lane.device)
                            .arg(rank.rank));
  html += row("start", formatTime(t.start[src]));
  html += row("duration", formatTime(dur));
  // The bucket and size the trace does not say, from the bucket whose allreduce this is.
  std::int32_t bucket = t.bucket[src];
  std::int64_t bytes = t.bytes[src];
  const auto& rr = run.report.ranks[static_cast<std::size_t>(lane.rank_index)];
  for (const auto& b : rr.buckets) {
    if (b.device == lane.device && b.stream == lane.stream && b.start_ns == t.start[src]) {
      if (bucket == trace::kNoBucket) bucket = b.id;
      if (bytes < 0) bytes = b.bytes;
      break;
    }
  }
  if (bucket != trace::kNoBucket) html += row("bucket", QString::number(bucket));
  if (bytes >= 0) {
    html += row("bytes", formatBytes(bytes));
    const std::string& name = rank.names[t.name[src]];
    const auto style = lane.events.style(box.first);
    const bool comm = run.rules->classify(t.kind_of[src], name, t.stream()).cls ==
                      analysis::ActivityClass::Communication;
    for (const auto& [label, value] : bandwidthRows(
             bytes, dur, comm,
             isCommKindStyle(style) ? commKindOfStyle(style) : analysis::CollectiveKind::Unknown,
             analysis::collectiveRanks(rank.collectiveArgs(t.correlation[src]), rank.world_size),
             rank.world_size, matchedTransferTime(run, lane.rank_index, lane.track, src)))
      html += row(label, value);
  }
  if (const auto st = lane.events.style(box.first);
      isHiddenCommStyle(st) || isExposedCommStyle(st)) {
    const TimeNs s = lane.events.start(box.first), e = lane.events.end(box.first);
    html += row(isHiddenCommStyle(st) ? "hidden part" : "exposed part", formatTime(e - s));
  }
  html += collectiveRows(run, lane, src, lane.events.style(box.first));
  // The host call that launched it (METRICS.md "Launches").
  const auto r = static_cast<std::size_t>(lane.rank_index);
  if (r < run.timeline.launches.size()) {
    for (const auto& l : run.timeline.launches[r].links(rank, t.correlation[src])) {
      if (l.gpu_track != lane.track || l.gpu_index != src) continue;
      const auto& h = rank.tracks[static_cast<std::size_t>(l.host_track)];
      html += row("launched by", QStringLiteral("%1 on %2")
                                     .arg(QString::fromStdString(rank.names[h.name[l.host_index]]),
                                          QString::fromStdString(hostThreadLabel(rank, h))));
      html += row("launch latency",
                  formatTime(analysis::launchLatency(h.start[l.host_index], t.start[src])));
      break;
    }
  }
  return html;
}

// A range of a host lane (a CPU op, an annotation, a runtime call) or of a GPU annotation lane;
// for a launch, the GPU work it launched and the launch latency (METRICS.md "Launches").
QString rangeTooltip(const LoadedRun& run, const Lane& lane, const DrawBox& box) {
  const auto& rank = run.run.ranks[static_cast<std::size_t>(lane.rank_index)];
  const auto src = lane.events.source(box.first);
  const auto& t = rank.tracks[static_cast<std::size_t>(lane.track)];
  QString html = QStringLiteral("<b>%1</b><table>")
                     .arg(QString::fromStdString(rank.names[t.name[src]]).toHtmlEscaped());
  if (lane.kind == LaneKind::Host) {
    html += row("thread", QStringLiteral("%1 · rank %2")
                              .arg(QString::fromStdString(hostThreadLabel(rank, t)))
                              .arg(rank.rank));
  } else {
    html += row("stream", QStringLiteral("%1 · gpu %2 · rank %3")
                              .arg(QString::fromStdString(analysis::streamText(lane.stream)))
                              .arg(lane.device)
                              .arg(rank.rank));
  }
  const auto cat = trace::categoryName(t.kind_of[src]);
  if (!cat.empty()) html += row("category", QString::fromUtf8(cat.data(), cat.size()));
  html += row("start", formatTime(t.start[src]));
  html += row("duration", formatTime(t.dur[src]));
  if (t.correlation[src] != trace::kNoCorrelation)
    html += row("correlation", QString::number(t.correlation[src]));
  const auto& links = run.timeline.launches[static_cast<std::size_t>(lane.rank_index)];
  const auto launched = lane.kind == LaneKind::Host
                            ? links.launchesOf(rank, t.correlation[src], lane.track, src)
                            : std::vector<analysis::LaunchLink>{};
  if (!launched.empty()) {
    const auto& l = launched.front();
    const auto& g = rank.tracks[static_cast<std::size_t>(l.gpu_track)];
    html += row("launched", QStringLiteral("%1 on stream %2")
                                .arg(QString::fromStdString(rank.names[g.name[l.gpu_index]]))
                                .arg(QString::fromStdString(analysis::streamText(g.stream()))));
    html += row("launch latency",
                formatTime(analysis::launchLatency(t.start[src], g.start[l.gpu_index])));
    if (launched.size() > 1)
      html += row("", QStringLiteral("and %1 more with this correlation").arg(launched.size() - 1));
  }
  return html;
}

// A step of the steps lane, or the stretch after a rank's last step where its trace is cut short.
QString stepTooltip(const LoadedRun& run, const Lane& lane, const DrawBox& box) {
  const auto& rank = run.run.ranks[static_cast<std::size_t>(lane.rank_index)];
  const auto src = lane.events.source(box.first);
  QString html;
  if (src >= rank.steps.size()) {
    html = QStringLiteral("<b>cut short</b><table>");
    html += row("from", formatTime(lane.events.start(box.first)));
    html += row("to", formatTime(lane.events.end(box.first)));
    html += row("", QStringLiteral("rank %1 stopped here before its step finished; its trace "
                                   "is incomplete")
                        .arg(rank.rank));
    return html;
  }
  const auto& step = rank.steps[src];
  html = QStringLiteral("<b>step %1</b><table>").arg(step.number);
  html += row("start", formatTime(step.start));
  html += row("duration", formatTime(step.end - step.start));
  for (const auto& sr : run.report.ranks[static_cast<std::size_t>(lane.rank_index)].steps) {
    if (sr.step != step.number) continue;
    html += row("overlap", formatPct(sr.metrics.overlap_pct));
    html += row("exposed comm", formatTime(sr.metrics.exposed_ns));
    if (sr.dp_efficiency) html += row("DP efficiency", formatPct(*sr.dp_efficiency * 100.0, 1));
  }
  return html;
}

// A bucket of the buckets lane: its size, and when it was ready, waited and was reduced.
QString bucketTooltip(const LoadedRun& run, const Lane& lane, const DrawBox& box) {
  const auto src = lane.events.source(box.first);
  const auto& b = run.report.ranks[static_cast<std::size_t>(lane.rank_index)].buckets[src];
  QString html =
      QStringLiteral("<b>bucket %1</b>%2<table>").arg(b.id).arg(b.inferred ? " (inferred)" : "");
  if (b.step != trace::kNoStep) html += row("step", QString::number(b.step));
  html += row("bytes", formatBytes(b.bytes));
  if (b.tensors > 0) html += row("tensors", QString::number(b.tensors));
  html += row("ready", formatTime(b.ready_ns));
  html += row("queued", formatTime(b.wait_ns));
  html += row("allreduce", formatTime(b.end_ns - b.start_ns));
  html += row("exposed", formatTime(b.exposed_ns));
  html += row("busbw", formatBandwidth(b.busbw_gbps, b.bw_basis));
  if (b.busbw_gbps) {
    const auto over = analysis::bandwidthBasisText(b.bw_basis);
    html +=
        row("bandwidth over", QString::fromUtf8(over.data(), static_cast<qsizetype>(over.size())));
    const auto& rr = run.report.ranks[static_cast<std::size_t>(lane.rank_index)];
    if (const auto note = analysis::busbwRanksNote(b.bw_ranks, rr.world_size); !note.empty())
      html += row("busbw ranks", QString::fromStdString(note));
  }
  return html;
}

// A stretch of the overlap strip: communication hidden under compute, or exposed.
QString overlapTooltip(const Lane& lane, const DrawBox& box) {
  const auto style = lane.events.style(box.first);
  const TimeNs s = lane.events.start(box.first), e = lane.events.end(box.first);
  QString html = QStringLiteral("<b>communication %1</b><table>")
                     .arg(isHiddenCommStyle(style)           ? "hidden under compute"
                          : style == kStyleCommWaiting       ? "exposed, waiting for a late rank"
                          : lane.label == kOverlapSplitLabel ? "exposed, transfer"
                                                             : "exposed");
  html += row("start", formatTime(s));
  html += row("duration", formatTime(e - s));
  return html;
}
}  // namespace

QString laneBoxTooltip(const LoadedRun& run, const Lane& lane, const DrawBox& box,
                       std::optional<double> busy) {
  QString html = QStringLiteral("<table>");
  if (box.count > 1) {
    html = mergedBoxTooltip(lane, box, busy);
  } else {
    switch (lane.kind) {
      case LaneKind::Stream:
        html = streamTooltip(run, lane, box);
        break;
      case LaneKind::Steps:
        html = stepTooltip(run, lane, box);
        break;
      case LaneKind::Buckets:
        html = bucketTooltip(run, lane, box);
        break;
      case LaneKind::Overlap:
        html = overlapTooltip(lane, box);
        break;
      case LaneKind::Host:
      case LaneKind::GpuAnnotation:
        html = rangeTooltip(run, lane, box);
        break;
    }
  }
  return html + "</table>";
}

}  // namespace ddpscope::ui
