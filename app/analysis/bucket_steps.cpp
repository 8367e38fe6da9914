#include "app/analysis/bucket_steps.h"

#include <algorithm>
#include <map>

namespace ddpscope::analysis {

bool inSelection(const StepSelection& selection, std::int32_t step) {
  if (selection.whole_trace) return true;
  return std::binary_search(selection.used.begin(), selection.used.end(), step);
}

TimeNs readyFromStepStart(const RankReport& rank, const BucketReport& bucket) {
  for (const auto& s : rank.steps)
    if (s.step == bucket.step) return bucket.ready_ns - s.start_ns;
  return bucket.ready_ns - rank.whole.first_ns;
}

std::vector<BucketMean> bucketMeans(const RunReport& report, const StepSelection& selection) {
  std::map<std::int32_t, BucketMean> per_id;
  for (const auto& rank : report.ranks) {
    for (const auto& b : rank.buckets) {
      if (!inSelection(selection, b.step)) continue;
      auto& m = per_id[b.id];
      m.bytes = m.samples == 0 || m.bytes == b.bytes ? b.bytes : -1;
      const std::int32_t tensors = b.inferred ? -1 : b.tensors;
      m.tensors = m.samples == 0 || m.tensors == tensors ? tensors : -1;
      m.id = b.id;
      ++m.samples;
      m.hidden_ns += static_cast<double>(b.end_ns - b.start_ns - b.exposed_ns);
      m.exposed_ns += static_cast<double>(b.exposed_ns);
      m.wait_ns += static_cast<double>(b.wait_ns);
      m.ready_ns += static_cast<double>(readyFromStepStart(rank, b));
    }
  }
  std::vector<BucketMean> out;
  for (auto& [id, m] : per_id) {
    m.hidden_ns /= m.samples;
    m.exposed_ns /= m.samples;
    m.wait_ns /= m.samples;
    m.ready_ns /= m.samples;
    out.push_back(m);
  }
  return out;
}

}  // namespace ddpscope::analysis
