#include "app/analysis/collectives.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

namespace ddpscope::analysis {

namespace {

using CommKernel = CollectiveTiming;

// A collective's kind and process group: what it is matched within.
using GroupKey = std::pair<CollectiveKind, std::string>;

// The kind of a communication kernel: the rule's, else what the trace's arguments say.
CollectiveKind kindOf(CollectiveKind by_rule, const trace::CollectiveArgs* args) {
  if (by_rule != CollectiveKind::Unknown || args == nullptr || args->name.empty()) return by_rule;
  return collectiveKindOfKernel(args->name);
}

// A rank's communication kernels by kind and process group, each list in start order.
std::map<GroupKey, std::vector<CommKernel>> commByGroup(const std::vector<CollectiveTiming>& all) {
  std::map<GroupKey, std::vector<CommKernel>> out;
  for (const auto& k : all)
    out[{k.kind, k.group}].push_back(k);
  for (auto& [key, v] : out)
    std::stable_sort(v.begin(), v.end(),
                     [](const CommKernel& a, const CommKernel& b) { return a.start < b.start; });
  return out;
}

// One matched collective from the kernel of each involved rank (nullptr: not involved).
MatchedCollective matchOne(const std::vector<std::int32_t>& rank_numbers, const GroupKey& key,
                           const std::vector<const CommKernel*>& kernels,
                           std::vector<std::vector<Interval>>& waits,
                           std::vector<std::vector<MatchedKernel>>& matched_kernels) {
  const std::size_t n = kernels.size();
  MatchedCollective m;
  m.kind = key.first;
  m.group = key.second;
  m.first_start_ns = std::numeric_limits<TimeNs>::max();
  m.last_start_ns = std::numeric_limits<TimeNs>::min();
  for (std::size_t r = 0; r < n; ++r) {
    const CommKernel* e = kernels[r];
    if (e == nullptr) continue;
    m.first_start_ns = std::min(m.first_start_ns, e->start);
    if (e->start > m.last_start_ns) {  // the first of equal starts stays the last rank
      m.last_start_ns = e->start;
      m.last_rank = rank_numbers[r];
      m.bytes = e->bytes;
      m.step = e->step;
    }
  }
  m.skew_ns = m.last_start_ns - m.first_start_ns;
  if (m.skew_ns == 0) m.last_rank = -1;  // every rank started together: none was late
  m.events.assign(n, EventRef{});
  m.steps.assign(n, trace::kNoStep);
  m.wait_ns.assign(n, 0);
  m.transfer_ns.assign(n, 0);
  for (std::size_t r = 0; r < n; ++r) {
    const CommKernel* e = kernels[r];
    if (e == nullptr) continue;
    const TimeNs arrived = std::clamp(m.last_start_ns, e->start, e->end);
    m.events[r] = e->ref;
    m.wait_ns[r] = arrived - e->start;
    m.transfer_ns[r] = e->end - arrived;
    if (arrived > e->start) waits[r].push_back({e->start, arrived});
    matched_kernels[r].push_back({e->rule_kind, e->bytes, e->ranks, e->start, arrived, e->end});
    m.steps[r] = e->step;
  }
  return m;
}

std::string groupText(const GroupKey& key) {
  std::string s(collectiveKindName(key.first));
  if (!key.second.empty()) s += " of process group " + key.second;
  return s;
}

}  // namespace

std::vector<CollectiveTiming> collectiveTimings(const trace::RankTrace& rank,
                                                const RankActivity& act) {
  std::vector<CollectiveTiming> out;
  if (!act.classes) return out;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!act.included.empty() && !act.included[ti][i]) continue;  // outside --hta-compat's window
      const auto& c = act.classes->get(ti, i);
      if (c.cls != ActivityClass::Communication) continue;
      const trace::CollectiveArgs* args = rank.collectiveArgs(t.correlation[i]);
      CollectiveTiming k;
      k.kind = kindOf(c.kind, args);
      k.rule_kind = c.kind;
      if (args) {
        k.group = args->group;
        k.seq = args->seq;
      }
      k.start = t.start[i];
      k.end = t.end(i);
      k.bytes = t.bytes[i];
      k.step = t.step[i];
      k.ranks = collectiveRanks(args, rank.world_size);
      k.ref = {static_cast<std::int32_t>(ti), static_cast<std::int64_t>(i)};
      out.push_back(std::move(k));
    }
  }
  return out;
}

CollectiveMatching matchTimings(const std::vector<std::vector<CollectiveTiming>>& timings,
                                const std::vector<std::int32_t>& rank_numbers) {
  CollectiveMatching out;
  const std::size_t n = timings.size();
  out.waits.resize(n);
  out.kernels.resize(n);
  out.involved.assign(n, false);
  if (n < 2 || rank_numbers.size() != n) return out;
  std::vector<std::map<GroupKey, std::vector<CommKernel>>> comm;
  std::set<GroupKey> keys;
  for (std::size_t r = 0; r < n; ++r) {
    comm.push_back(commByGroup(timings[r]));
    for (const auto& [key, v] : comm.back())
      keys.insert(key);
  }
  auto& waits = out.waits;
  auto& report = out;
  bool by_seq = false, by_order = false;
  for (const GroupKey& key : keys) {
    // Point-to-point kernels and communication of unknown kind do not involve every rank.
    if (key.first == CollectiveKind::SendRecv || key.first == CollectiveKind::Unknown) continue;
    std::vector<const std::vector<CommKernel>*> lists(n, nullptr);
    std::size_t involved = 0;
    bool all_numbered = true;
    for (std::size_t r = 0; r < n; ++r) {
      auto it = comm[r].find(key);
      if (it == comm[r].end()) continue;
      lists[r] = &it->second;
      ++involved;
      for (const auto& e : it->second)
        all_numbered = all_numbered && e.seq >= 0;
    }
    if (key.second.empty() && involved < n) {
      // Without process groups every rank takes part in every collective: some ranks ran none.
      std::size_t most = 0;
      for (const auto* l : lists)
        most = std::max(most, l ? l->size() : std::size_t{0});
      report.warnings.push_back("the ranks ran different numbers of " + groupText(key) +
                                " kernels (0 to " + std::to_string(most) + "): none is matched");
      continue;
    }
    if (involved < 2) continue;
    if (all_numbered) {
      // By sequence number: the collectives every involved rank has.
      std::vector<std::map<std::int64_t, const CommKernel*>> by_number(n);
      std::map<std::int64_t, std::size_t> seen;
      std::size_t repeated = 0;
      for (std::size_t r = 0; r < n; ++r) {
        if (!lists[r]) continue;
        for (const auto& e : *lists[r]) {
          if (by_number[r].emplace(e.seq, &e).second) {
            ++seen[e.seq];
          } else {
            ++repeated;  // coalesced kernels of one collective: the first is matched
          }
        }
      }
      std::size_t partial = 0;
      std::int32_t index = 0;
      for (const auto& [seq, count] : seen) {
        if (count != involved) {
          ++partial;
          continue;
        }
        std::vector<const CommKernel*> kernels(n, nullptr);
        for (std::size_t r = 0; r < n; ++r)
          if (lists[r]) kernels[r] = by_number[r].at(seq);
        MatchedCollective m = matchOne(rank_numbers, key, kernels, waits, out.kernels);
        m.seq = seq;
        m.index = index++;
        report.matched.push_back(std::move(m));
      }
      if (repeated > 0) {
        report.warnings.push_back(std::to_string(repeated) + " " + groupText(key) +
                                  " kernels repeat a sequence number of their rank: only the "
                                  "first of each is matched");
      }
      if (partial > 0) {
        report.warnings.push_back(std::to_string(partial) + " " + groupText(key) +
                                  " sequence numbers are not on every rank of the group: "
                                  "those collectives are not matched");
      }
      by_seq = true;
      continue;
    }
    std::size_t fewest = std::numeric_limits<std::size_t>::max(), most = 0;
    for (const auto* l : lists) {
      if (!l) continue;
      fewest = std::min(fewest, l->size());
      most = std::max(most, l->size());
    }
    if (fewest != most) {
      report.warnings.push_back("the ranks ran different numbers of " + groupText(key) +
                                " kernels (" + std::to_string(fewest) + " to " +
                                std::to_string(most) + "): the first " + std::to_string(fewest) +
                                " are matched by order, the rest are not");
    }
    for (std::size_t j = 0; j < fewest; ++j) {
      std::vector<const CommKernel*> kernels(n, nullptr);
      for (std::size_t r = 0; r < n; ++r)
        if (lists[r]) kernels[r] = &(*lists[r])[j];
      MatchedCollective m = matchOne(rank_numbers, key, kernels, waits, out.kernels);
      m.index = static_cast<std::int32_t>(j);
      report.matched.push_back(std::move(m));
    }
    by_order = by_order || fewest > 0;
  }
  std::sort(report.matched.begin(), report.matched.end(),
            [](const MatchedCollective& a, const MatchedCollective& b) {
              return a.last_start_ns < b.last_start_ns;
            });
  if (by_seq && by_order) {
    report.matched_by =
        "process group and sequence number where the traces carry them, else the order of each "
        "kind and group on each rank";
  } else if (by_seq) {
    report.matched_by = "process group and sequence number";
  } else if (by_order) {
    report.matched_by =
        "order of each kind and process group on each rank (the traces carry no sequence "
        "numbers)";
  }
  for (std::size_t r = 0; r < n; ++r) {
    out.involved[r] = std::any_of(out.matched.begin(), out.matched.end(),
                                  [r](const MatchedCollective& m) { return m.involves(r); });
  }
  return out;
}

bool matchedSplitKnown(const RunReport& report) {
  return report.completeness.missing_ranks.empty();
}

std::string matchedSplitUnknownWarning(const RunReport& report) {
  const auto& missing = report.completeness.missing_ranks;
  return "waiting for a late rank is not told from transfer: " + std::to_string(missing.size()) +
         " rank" + (missing.size() == 1 ? "" : "s") + " of the world " +
         (missing.size() == 1 ? "has" : "have") +
         " no trace, and the loaded ranks' wait for one of them would read as transfer; load "
         "every rank for the split";
}

namespace {

// The bandwidth of a rank's per-kind collectives and buckets over the transfer parts of its
// matched kernels (docs/METRICS.md "Bandwidth"). A kind keeps its kernel-time figure unless every
// one of its sized kernels was matched with a transfer part (a clock skew between machines can
// make a kernel end before the last rank's start: no time to divide by); so does a bucket whose
// allreduce was not. `offset_ns`: the kernels' times less the report's.
void putTransferBandwidth(const std::vector<MatchedKernel>& kernels, RankReport& rr,
                          TimeNs offset_ns) {
  struct Sum {
    BandwidthSum bw;
    std::int64_t kernels = 0;
  };
  std::array<Sum, kCollectiveKindCount> by_kind{};
  std::map<std::pair<TimeNs, TimeNs>, TimeNs> allreduce_arrival;  // (start, end) → arrival
  for (const auto& k : kernels) {
    if (k.end - k.arrived <= 0) continue;
    if (k.kind == CollectiveKind::AllReduce)
      allreduce_arrival.emplace(std::pair{k.start - offset_ns, k.end - offset_ns},
                                k.arrived - offset_ns);
    if (k.bytes < 0) continue;
    auto& sum = by_kind[static_cast<std::size_t>(k.kind)];
    sum.bw.add(k.kind, k.bytes, k.end - k.arrived, k.ranks);
    ++sum.kernels;
  }
  for (auto& st : rr.collectives) {
    const auto& sum = by_kind[static_cast<std::size_t>(st.kind)];
    if (sum.kernels == 0 || sum.kernels != st.sized) continue;
    const Bandwidth bw = collectiveBandwidth(sum.bw);
    st.algbw_gbps = bw.algbw_gbps;
    st.busbw_gbps = bw.busbw_gbps;
    st.bw_ranks = sum.bw.ranks;
    st.bw_basis = BandwidthBasis::Transfer;
  }
  for (auto& b : rr.buckets) {
    const auto it = allreduce_arrival.find({b.start_ns, b.end_ns});
    if (it == allreduce_arrival.end()) continue;
    const Bandwidth bw =
        collectiveBandwidth(CollectiveKind::AllReduce, b.bytes, b.end_ns - it->second, b.bw_ranks);
    b.algbw_gbps = bw.algbw_gbps;
    b.busbw_gbps = bw.busbw_gbps;
    b.bw_basis = BandwidthBasis::Transfer;
  }
}

}  // namespace

void applyMatchedSplit(const CollectiveMatching& matching, std::size_t rank_index,
                       const IntervalSet& exposed, RankReport& rr, TimeNs offset_ns) {
  if (rank_index >= matching.involved.size() || !matching.involved[rank_index]) return;
  if (rank_index < matching.kernels.size())
    putTransferBandwidth(matching.kernels[rank_index], rr, offset_ns);
  // The rank's exposed communication inside its waits, and the rest.
  const IntervalSet waits = unionOf(matching.waits[rank_index]);
  const TimeNs exposed_wait = intersectionLength(waits, exposed);
  rr.exposed_wait_ns = exposed_wait;
  rr.comm_wait_ns = totalLength(waits);
  rr.exposed_transfer_ns = rr.whole.exposed_ns - exposed_wait;
  // Per step: the waits and transfers of the rank's matched kernels of that step.
  std::map<std::int32_t, std::pair<TimeNs, TimeNs>> by_step;
  for (const auto& m : matching.matched) {
    if (!m.involves(rank_index)) continue;
    auto& [wait, transfer] = by_step[m.steps[rank_index]];
    wait += m.wait_ns[rank_index];
    transfer += m.transfer_ns[rank_index];
  }
  for (auto& st : rr.steps) {
    const auto it = by_step.find(st.step);
    if (it == by_step.end()) continue;  // no collective of the step was matched: none
    st.matched_wait_ns = it->second.first;
    st.matched_transfer_ns = it->second.second;
  }
}

void matchCollectives(const trace::Run& run, const std::vector<RankActivity>& activities,
                      RunReport& report) {
  const std::size_t n = run.ranks.size();
  if (n < 2 || activities.size() != n) return;
  std::vector<std::vector<CollectiveTiming>> timings;
  std::vector<std::int32_t> rank_numbers;
  for (std::size_t r = 0; r < n; ++r) {
    timings.push_back(collectiveTimings(run.ranks[r], activities[r]));
    rank_numbers.push_back(run.ranks[r].rank);
  }
  CollectiveMatching matching = matchTimings(timings, rank_numbers);
  if (!matchedSplitKnown(report)) {
    if (!matching.matched.empty()) report.warnings.push_back(matchedSplitUnknownWarning(report));
  } else {
    for (std::size_t r = 0; r < n; ++r)
      if (matching.involved[r])
        applyMatchedSplit(matching, r, subtract(activities[r].comm, activities[r].compute),
                          report.ranks[r]);
  }
  report.matched = std::move(matching.matched);
  report.matched_by = std::move(matching.matched_by);
  for (auto& w : matching.warnings)
    report.warnings.push_back(std::move(w));
}

void checkSerialization(const trace::RankTrace& rank, const RankActivity& act, RankReport& out,
                        TimeNs tolerance_ns) {
  out.serialized.clear();
  out.serialization_checked = false;
  if (!act.classes) return;
  // When each collective kernel could have started: its launch's end (a runtime or driver
  // call with the same correlation id), and the end of the work before it on its stream.
  struct Kernel {
    CommKernel k;
    CollectiveKind kind = CollectiveKind::Unknown;
    std::string group;
    std::int64_t stream = 0;
    TimeNs launched = std::numeric_limits<TimeNs>::min();
  };
  std::unordered_map<std::int64_t, std::vector<Kernel>> by_correlation;
  std::vector<Kernel> kernels;
  for (CollectiveTiming& timing : collectiveTimings(rank, act)) {
    if (timing.group.empty()) continue;  // its communicator is not known
    const auto& t = rank.tracks[static_cast<std::size_t>(timing.ref.track)];
    const auto i = static_cast<std::size_t>(timing.ref.row);
    Kernel k;
    k.kind = timing.kind;
    k.group = timing.group;
    k.stream = t.stream();
    // The work before it on its stream: it could not start before that ended.
    if (i > 0) k.launched = t.end(i - 1);
    k.k = std::move(timing);
    by_correlation[t.correlation[i]].push_back(std::move(k));
  }
  std::size_t with_launch = 0;
  for (const auto& t : rank.tracks) {
    if (t.kind != trace::TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.kind_of[i] != trace::EventKind::Runtime && t.kind_of[i] != trace::EventKind::Driver)
        continue;
      auto it = by_correlation.find(t.correlation[i]);
      if (it == by_correlation.end()) continue;
      for (auto& k : it->second) {
        k.launched = std::max(k.launched, t.end(i));
        kernels.push_back(k);
        ++with_launch;
      }
      by_correlation.erase(it);
    }
  }
  if (with_launch == 0) return;
  out.serialization_checked = true;
  std::sort(kernels.begin(), kernels.end(),
            [](const Kernel& a, const Kernel& b) { return a.k.start < b.k.start; });
  std::vector<std::size_t> by_end(kernels.size());
  for (std::size_t i = 0; i < by_end.size(); ++i)
    by_end[i] = i;
  std::sort(by_end.begin(), by_end.end(),
            [&](std::size_t a, std::size_t b) { return kernels[a].k.end < kernels[b].k.end; });
  // For each kernel, the collective of its group on another stream that ended last, at most
  // `tolerance_ns` before it started.
  for (const Kernel& kb : kernels) {
    const Kernel* behind = nullptr;
    auto it = std::lower_bound(by_end.begin(), by_end.end(), kb.k.start - tolerance_ns,
                               [&](std::size_t i, TimeNs t) { return kernels[i].k.end < t; });
    for (; it != by_end.end() && kernels[*it].k.end <= kb.k.start; ++it) {
      const Kernel& ka = kernels[*it];
      if (ka.group != kb.group || ka.stream == kb.stream) continue;
      if (!behind || ka.k.end > behind->k.end) behind = &ka;
    }
    if (!behind) continue;
    // It waited for that one, not for its data, when it could have started while that one ran.
    const TimeNs could_start = std::max(kb.launched, behind->k.start);
    if (could_start + tolerance_ns >= behind->k.end) continue;
    SerializedCollective s;
    s.event = kb.k.ref;
    s.kind = kb.kind;
    s.stream = kb.stream;
    s.group = kb.group;
    s.start_ns = kb.k.start;
    s.waited_ns = kb.k.start - could_start;
    s.behind = behind->k.ref;
    s.behind_kind = behind->kind;
    s.behind_stream = behind->stream;
    out.serialized.push_back(std::move(s));
  }
}

}  // namespace ddpscope::analysis
