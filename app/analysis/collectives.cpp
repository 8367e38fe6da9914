#include "app/analysis/collectives.h"

#include <algorithm>
#include <array>
#include <limits>

namespace ddpscope::analysis {

namespace {

struct CommKernel {
  TimeNs start = 0, end = 0;
  std::int64_t bytes = -1;
  std::int32_t step = trace::kNoStep;
};

// A rank's communication kernels by kind, each kind in start order.
std::array<std::vector<CommKernel>, kCollectiveKindCount> commByKind(const trace::RankTrace& rank,
                                                                     const RankActivity& act) {
  std::array<std::vector<CommKernel>, kCollectiveKindCount> out;
  if (!act.classes) return out;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!act.included.empty() && !act.included[ti][i]) continue;  // outside --hta-compat's window
      const auto& c = act.classes->get(ti, i);
      if (c.cls != ActivityClass::Communication) continue;
      out[static_cast<std::size_t>(c.kind)].push_back(
          {t.start[i], t.end(i), t.bytes[i], t.step[i]});
    }
  }
  for (auto& v : out)
    std::stable_sort(v.begin(), v.end(),
                     [](const CommKernel& a, const CommKernel& b) { return a.start < b.start; });
  return out;
}

}  // namespace

void matchCollectives(const trace::Run& run, const std::vector<RankActivity>& activities,
                      RunReport& report) {
  const std::size_t n = run.ranks.size();
  if (n < 2 || activities.size() != n) return;
  std::vector<std::array<std::vector<CommKernel>, kCollectiveKindCount>> comm;
  for (std::size_t r = 0; r < n; ++r)
    comm.push_back(commByKind(run.ranks[r], activities[r]));
  std::vector<std::vector<Interval>> waits(n);
  std::vector<bool> matched_any(n, false);
  for (int k = 1; k < kCollectiveKindCount; ++k) {
    // Point-to-point kernels and communication of unknown kind do not involve every rank.
    if (k == static_cast<int>(CollectiveKind::SendRecv) ||
        k == static_cast<int>(CollectiveKind::Unknown))
      continue;
    std::size_t fewest = std::numeric_limits<std::size_t>::max(), most = 0;
    for (const auto& c : comm) {
      fewest = std::min(fewest, c[static_cast<std::size_t>(k)].size());
      most = std::max(most, c[static_cast<std::size_t>(k)].size());
    }
    if (most == 0) continue;
    if (fewest != most) {
      report.warnings.push_back("the ranks ran different numbers of " +
                                std::string(collectiveKindName(static_cast<CollectiveKind>(k))) +
                                " kernels (" + std::to_string(fewest) + " to " +
                                std::to_string(most) + "): the first " + std::to_string(fewest) +
                                " are matched by order, the rest are not");
    }
    for (std::size_t j = 0; j < fewest; ++j) {
      MatchedCollective m;
      m.kind = static_cast<CollectiveKind>(k);
      m.index = static_cast<std::int32_t>(j);
      m.first_start_ns = std::numeric_limits<TimeNs>::max();
      m.last_start_ns = std::numeric_limits<TimeNs>::min();
      for (std::size_t r = 0; r < n; ++r) {
        const auto& e = comm[r][static_cast<std::size_t>(k)][j];
        m.first_start_ns = std::min(m.first_start_ns, e.start);
        if (e.start > m.last_start_ns) {  // the first of equal starts stays the last rank
          m.last_start_ns = e.start;
          m.last_rank = run.ranks[r].rank;
          m.bytes = e.bytes;
          m.step = e.step;
        }
      }
      m.skew_ns = m.last_start_ns - m.first_start_ns;
      if (m.skew_ns == 0) m.last_rank = -1;  // every rank started together: none was late
      for (std::size_t r = 0; r < n; ++r) {
        const auto& e = comm[r][static_cast<std::size_t>(k)][j];
        const TimeNs arrived = std::clamp(m.last_start_ns, e.start, e.end);
        m.wait_ns.push_back(arrived - e.start);
        m.transfer_ns.push_back(e.end - arrived);
        if (arrived > e.start) waits[r].push_back({e.start, arrived});
        matched_any[r] = true;
      }
      report.matched.push_back(std::move(m));
    }
  }
  std::sort(report.matched.begin(), report.matched.end(),
            [](const MatchedCollective& a, const MatchedCollective& b) {
              return a.last_start_ns < b.last_start_ns;
            });
  if (!report.matched.empty())
    report.matched_by = "order of each kind on each rank (the traces carry no sequence numbers)";
  // A rank's exposed communication inside its waits, and the rest.
  for (std::size_t r = 0; r < n; ++r) {
    if (!matched_any[r]) continue;
    const auto& act = activities[r];
    const IntervalSet waiting = intersect(unionOf(std::move(waits[r])), act.comm);
    const TimeNs exposed_wait = totalLength(waiting) - intersectionLength(waiting, act.compute);
    auto& rr = report.ranks[r];
    rr.exposed_wait_ns = exposed_wait;
    rr.exposed_transfer_ns = rr.whole.exposed_ns - exposed_wait;
  }
}

}  // namespace ddpscope::analysis
