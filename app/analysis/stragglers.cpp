#include "app/analysis/stragglers.h"

#include <algorithm>
#include <map>

namespace ddpscope::analysis {

std::optional<HiddenSplit> hiddenSplit(const RankReport& r) {
  if (!r.comm_wait_ns || !r.exposed_wait_ns) return std::nullopt;
  HiddenSplit h;
  // The waits lie inside the rank's communication: what of them is not exposed is hidden.
  h.hidden_wait_ns = std::max<TimeNs>(0, *r.comm_wait_ns - *r.exposed_wait_ns);
  h.hidden_transfer_ns = std::max<TimeNs>(0, r.whole.overlap_ns - h.hidden_wait_ns);
  h.transfer_ns = std::max<TimeNs>(0, r.whole.comm_ns - *r.comm_wait_ns);
  if (h.transfer_ns > 0)
    h.transfer_overlap_pct =
        100.0 * static_cast<double>(h.hidden_transfer_ns) / static_cast<double>(h.transfer_ns);
  return h;
}

StragglerSummary summarizeStragglers(const RunReport& report) {
  StragglerSummary s;
  std::map<std::int32_t, std::int32_t> last;  // rank -> collectives it started last at
  for (const auto& m : report.matched) {
    if (m.skew_ns <= 0 || m.last_rank < 0) continue;
    ++s.skewed;
    ++last[m.last_rank];
  }
  s.late_known = true;
  for (const auto& [rank, count] : last) {  // ascending ranks: the lowest wins a tie
    if (count > s.late_count) {
      s.late_count = count;
      s.late_rank = rank;
    }
  }
  if (2 * s.late_count <= s.skewed) {  // no rank was last at more than half of them
    s.late_rank.reset();
    s.late_count = 0;
  }
  TimeNs hidden_transfer = 0, transfer = 0, hidden = 0, comm = 0;
  for (const auto& r : report.ranks) {
    if (!r.exposed_wait_ns || !r.exposed_transfer_ns) continue;
    addExposedSplit(s, r.exposed_wait_ns, r.exposed_transfer_ns);
    if (const auto h = hiddenSplit(r)) {
      s.hidden_wait_ns = s.hidden_wait_ns.value_or(0) + h->hidden_wait_ns;
      hidden_transfer += h->hidden_transfer_ns;
      transfer += h->transfer_ns;
      hidden += r.whole.overlap_ns;
      comm += r.whole.comm_ns;
    }
  }
  if (comm > 0)
    s.whole_overlap_pct = 100.0 * static_cast<double>(hidden) / static_cast<double>(comm);
  if (transfer > 0)
    s.transfer_overlap_pct =
        100.0 * static_cast<double>(hidden_transfer) / static_cast<double>(transfer);
  setExposedShares(s);
  return s;
}

void addExposedSplit(StragglerSummary& s, std::optional<TimeNs> wait_ns,
                     std::optional<TimeNs> transfer_ns) {
  if (!wait_ns || !transfer_ns) return;
  s.exposed_wait_ns = s.exposed_wait_ns.value_or(0) + *wait_ns;
  s.exposed_transfer_ns = s.exposed_transfer_ns.value_or(0) + *transfer_ns;
}

void setExposedShares(StragglerSummary& s) {
  s.wait_pct.reset();
  s.transfer_pct.reset();
  if (s.exposed_wait_ns && s.exposed_transfer_ns &&
      *s.exposed_wait_ns + *s.exposed_transfer_ns > 0) {
    s.wait_pct = 100.0 * static_cast<double>(*s.exposed_wait_ns) /
                 static_cast<double>(*s.exposed_wait_ns + *s.exposed_transfer_ns);
    s.transfer_pct = 100.0 - *s.wait_pct;
  }
}

}  // namespace ddpscope::analysis
