#pragma once
// Classification rules: what a GPU activity is (communication, computation, memory, other) and,
// for communication, which collective, as data rather than code. An ordered list; the first rule
// that matches an event wins. Built-in rules give ddpscope's default classification (NCCL, RCCL,
// HCCL, DeepEP, NVSHMEM, custom allreduce kernels, PyTorch symmetric memory, copies and
// synchronisations); a user's rules (a file: `--rules FILE`, DDPSCOPE_RULES, the app's settings)
// go before them. The file format and the built-in list: docs/RULES.md. No Qt.

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "app/analysis/classify.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

// The collectives of data-parallel training (nccl-tests' names, snake case in files and JSON).
enum class CollectiveKind : std::uint8_t {
  None,  // not a collective (computation, memory, other)
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  Broadcast,
  Reduce,
  SendRecv,
  Unknown,  // communication whose collective the name does not say (NVSHMEM, custom kernels)
};
inline constexpr int kCollectiveKindCount = 9;
// "allreduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce", "send_recv",
// "unknown" ("" for None).
std::string_view collectiveKindName(CollectiveKind k);
std::optional<CollectiveKind> collectiveKindFromName(std::string_view name);
// The collective a kernel's name says (NCCL's "AllReduce", PyTorch's "all_reduce", ...);
// Unknown when it says none.
CollectiveKind collectiveKindOfKernel(std::string_view name);
// busbw = algbw · factor (nccl-tests): allreduce 2(n−1)/n; reduce-scatter, all-gather,
// all-to-all (n−1)/n; broadcast, reduce, send/recv 1. None for fewer than 2 ranks or an
// unknown collective.
std::optional<double> busBandwidthFactor(CollectiveKind k, std::int32_t ranks);

struct ClassRule {
  std::string pattern;  // ECMAScript regular expression, searched for in the event's name
  // Optional conditions: the event's category ("kernel", "gpu_memcpy", "gpu_memset",
  // "cuda_sync"; "" = any) and stream (none = any).
  std::string category;
  std::optional<std::int64_t> stream;
  ActivityClass cls = ActivityClass::Computation;
  CollectiveKind kind = CollectiveKind::None;  // communication: None = from the kernel name
  std::string origin;                          // "built-in: NCCL", "my-rules.jsonl:3"
  std::regex re;
  // Built-in rules: every name the pattern matches holds one of these (a quick test that spares
  // most names the regular expression; tests check it against real traces' names). Empty: none.
  std::vector<std::string_view> needles;
};

// A bad rule file: the message names the file, the line and what is wrong there.
class RulesError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What classified an event: its class, its collective (communication only) and the rule.
struct Classification {
  ActivityClass cls = ActivityClass::None;
  CollectiveKind kind = CollectiveKind::None;
  std::int16_t rule = -1;  // index in ClassRules::rules(); -1: not a GPU activity
};

class ClassRules {
 public:
  // The built-in rules alone (shared, immutable).
  static std::shared_ptr<const ClassRules> builtin();
  // A user's rules (JSON Lines: one rule object a line, '#' comments), before the built-in
  // ones. Throws RulesError naming `origin` and the line.
  static std::shared_ptr<const ClassRules> withUserRules(std::string_view text,
                                                         const std::string& origin);
  // Reads the rules file at path; throws RulesError (also when it cannot be read).
  static std::shared_ptr<const ClassRules> fromFile(const std::string& path);
  // The rules a command-line tool uses: --rules FILE when given, else DDPSCOPE_RULES when set,
  // else the built-in ones.
  static std::shared_ptr<const ClassRules> forCommandLine(const std::string& rules_file);

  // The class of a GPU event of `kind` named `name` on `stream`; None for what is not GPU
  // activity (host events, GPU annotations).
  Classification classify(trace::EventKind kind, std::string_view name, std::int64_t stream) const;
  const std::vector<ClassRule>& rules() const { return rules_; }
  std::size_t userRuleCount() const { return user_rules_; }
  // Which rules these are, in words: "built-in", or "my.jsonl (2 rules), then built-in".
  const std::string& description() const { return description_; }
  // Whether any rule looks at the stream (then a name's class may differ between streams).
  bool dependsOnStream() const { return depends_on_stream_; }

 private:
  std::vector<ClassRule> rules_;
  std::size_t user_rules_ = 0;
  bool depends_on_stream_ = false;
  std::string description_ = "built-in";
};

// Classifies the events of one rank, each (name, kind) once, or once per stream when a rule looks
// at streams. The rank must outlive it.
class ClassCache {
 public:
  ClassCache(std::shared_ptr<const ClassRules> rules, const trace::RankTrace& rank);
  // Inline: the analysis asks once per event in several passes (out of line, the call was a
  // tenth of a rank's analysis). A (name, kind) not classified yet goes through fill().
  const Classification& get(std::size_t track, trace::EventKind kind, trace::NameId name) const {
    // Kernel, Memcpy, Memset and Sync are the GPU activity kinds, the slot's four columns.
    static_assert(static_cast<int>(trace::EventKind::Kernel) == 0 &&
                  static_cast<int>(trace::EventKind::Memcpy) == 1 &&
                  static_cast<int>(trace::EventKind::Memset) == 2 &&
                  static_cast<int>(trace::EventKind::Sync) == 3);
    const auto k = static_cast<std::size_t>(kind);
    if (k > static_cast<std::size_t>(trace::EventKind::Sync)) return kNotActivity;
    const auto& slot = slots_[slots_.size() == 1 ? 0 : track];
    if (!slot.empty()) {
      const auto& c = slot[static_cast<std::size_t>(name) * 4 + k];
      if (c.rule != kNotClassified) return c;
    }
    return fill(track, kind, name);
  }
  const Classification& get(std::size_t track, std::size_t i) const {
    const auto& t = rank_.tracks[track];
    return get(track, t.kind_of[i], t.name[i]);
  }
  const ClassRules& rules() const { return *rules_; }

 private:
  std::shared_ptr<const ClassRules> rules_;
  const trace::RankTrace& rank_;
  static constexpr std::int16_t kNotClassified = -2;
  static constexpr Classification kNotActivity{};
  const Classification& fill(std::size_t track, trace::EventKind kind, trace::NameId name) const;

  // Per slot (one, or one per track with stream rules): names × the four GPU activity kinds,
  // filled when first asked; rule kNotClassified = not yet classified.
  mutable std::vector<std::vector<Classification>> slots_;
};

}  // namespace ddpscope::analysis
