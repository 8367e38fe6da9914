#include "app/analysis/stragglers.h"

#include <map>

namespace ddpscope::analysis {

StragglerSummary summarizeStragglers(const RunReport& report) {
  StragglerSummary s;
  std::map<std::int32_t, std::int32_t> last;  // rank -> collectives it started last at
  for (const auto& m : report.matched) {
    if (m.skew_ns <= 0 || m.last_rank < 0) continue;
    ++s.skewed;
    ++last[m.last_rank];
  }
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
  for (const auto& r : report.ranks) {
    if (!r.exposed_wait_ns || !r.exposed_transfer_ns) continue;
    s.exposed_wait_ns = s.exposed_wait_ns.value_or(0) + *r.exposed_wait_ns;
    s.exposed_transfer_ns = s.exposed_transfer_ns.value_or(0) + *r.exposed_transfer_ns;
  }
  if (s.exposed_wait_ns && *s.exposed_wait_ns + *s.exposed_transfer_ns > 0) {
    s.wait_pct = 100.0 * static_cast<double>(*s.exposed_wait_ns) /
                 static_cast<double>(*s.exposed_wait_ns + *s.exposed_transfer_ns);
    s.transfer_pct = 100.0 - *s.wait_pct;
  }
  return s;
}

}  // namespace ddpscope::analysis
