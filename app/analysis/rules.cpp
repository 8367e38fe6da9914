#include "app/analysis/rules.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace ddpscope::analysis {

using trace::EventKind;

namespace {

constexpr std::string_view kKindNames[kCollectiveKindCount] = {
    "",          "allreduce", "reduce_scatter", "all_gather", "all_to_all",
    "broadcast", "reduce",    "send_recv",      "unknown"};

std::string lowerNoUnderscore(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct BuiltinRule {
  const char* origin;
  const char* pattern;
  const char* category;
  ActivityClass cls;
  CollectiveKind kind;
  // Every name the pattern matches holds one of these (ClassRule::needles); empty ones unused.
  std::array<std::string_view, 3> needles = {};
};

// The default classification. Copies and synchronisations by their category first; then
// kernels by name: collectives of the libraries data-parallel jobs use, copy-named and
// sync-named kernels, and computation for every other kernel.
constexpr BuiltinRule kBuiltin[] = {
    {"built-in: copies", "", "gpu_memcpy", ActivityClass::Memory, CollectiveKind::None},
    {"built-in: memsets", "", "gpu_memset", ActivityClass::Memory, CollectiveKind::None},
    {"built-in: synchronisation", "", "cuda_sync", ActivityClass::Other, CollectiveKind::None},
    {"built-in: NCCL",
     "^nccl|ncclKernel|ncclDevKernel",
     "kernel",
     ActivityClass::Communication,
     CollectiveKind::None,
     {"nccl"}},
    {"built-in: RCCL, HCCL",
     "^(rccl|hipccl|hccl)",
     "kernel",
     ActivityClass::Communication,
     CollectiveKind::None,
     {"rccl", "hipccl", "hccl"}},
    {"built-in: DeepEP",
     "^(void )?(dpsk|deep_ep)::(ep::)?(internode|intranode)(_ll)?::"
     "(dispatch|combine|notify)",
     "kernel",
     ActivityClass::Communication,
     CollectiveKind::AllToAll,
     {"dpsk::", "deep_ep::"}},
    {"built-in: NVSHMEM",
     "nvshmem",
     "kernel",
     ActivityClass::Communication,
     CollectiveKind::Unknown,
     {"nvshmem"}},
    {"built-in: custom allreduce (vLLM, SGLang)",
     "cross_device_reduce_[12]stage|(vllm|sglang)::.*(all_?reduce|AllReduce)",
     "kernel",
     ActivityClass::Communication,
     CollectiveKind::AllReduce,
     {"cross_device_reduce_", "vllm::", "sglang::"}},
    {"built-in: PyTorch symmetric memory",
     "(multimem|one_shot|two_shot)_(all_reduce|all_gather|reduce_scatter)",
     "kernel",
     ActivityClass::Communication,
     CollectiveKind::None,
     {"multimem_", "one_shot_", "two_shot_"}},
    {"built-in: copy kernels",
     "^(Memcpy|Memset|dma)",
     "kernel",
     ActivityClass::Memory,
     CollectiveKind::None,
     {"Memcpy", "Memset", "dma"}},
    {"built-in: synchronisation kernels",
     "Sync|Stream Wait Event",
     "kernel",
     ActivityClass::Other,
     CollectiveKind::None,
     {"Sync", "Stream Wait Event"}},
    {"built-in: computation", "", "kernel", ActivityClass::Computation, CollectiveKind::None},
};

ClassRule makeRule(std::string pattern, std::string category, std::optional<std::int64_t> stream,
                   ActivityClass cls, CollectiveKind kind, std::string origin) {
  ClassRule r;
  r.re = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  r.pattern = std::move(pattern);
  r.category = std::move(category);
  r.stream = stream;
  r.cls = cls;
  r.kind = kind;
  r.origin = std::move(origin);
  return r;
}

std::optional<ActivityClass> classFromName(std::string_view s) {
  for (int c = 0; c < kActivityClassCount; ++c)
    if (className(static_cast<ActivityClass>(c)) == s) return static_cast<ActivityClass>(c);
  return std::nullopt;
}

// One line of a rules file: a JSON object. Throws RulesError naming where.
ClassRule parseRuleLine(simdjson::dom::parser& parser, std::string_view line,
                        const std::string& where) {
  const auto bad = [&](const std::string& what) { return RulesError(where + ": " + what); };
  simdjson::dom::element doc;
  if (parser.parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS)
    throw bad(
        "not a JSON object (each line holds one rule, e.g. "
        "{\"match\": \"^my_allreduce\", \"class\": \"communication\"})");
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) throw bad("a rule must be a JSON object");
  std::string pattern, category, label;
  std::optional<std::int64_t> stream;
  std::optional<ActivityClass> cls;
  CollectiveKind kind = CollectiveKind::None;
  bool has_match = false;
  std::set<std::string> seen;
  for (const auto field : obj) {
    const std::string key(field.key);
    if (!seen.insert(key).second) throw bad("\"" + key + "\" is given twice");
    std::string_view text;
    if (key == "match" || key == "class" || key == "kind" || key == "category" || key == "name") {
      if (field.value.get_string().get(text) != simdjson::SUCCESS)
        throw bad("\"" + key + "\" must be a string");
    }
    if (key == "match") {
      pattern = std::string(text);
      has_match = true;
    } else if (key == "class") {
      cls = classFromName(text);
      if (!cls)
        throw bad("unknown class \"" + std::string(text) +
                  "\" (communication, computation, memory or other)");
    } else if (key == "kind") {
      const auto k = collectiveKindFromName(text);
      if (!k)
        throw bad("unknown collective kind \"" + std::string(text) +
                  "\" (allreduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce, "
                  "send_recv, unknown)");
      kind = *k;
    } else if (key == "category") {
      category = std::string(text);
      if (category != "kernel" && category != "gpu_memcpy" && category != "gpu_memset" &&
          category != "cuda_sync")
        throw bad("unknown category \"" + category +
                  "\" (kernel, gpu_memcpy, gpu_memset or cuda_sync)");
    } else if (key == "stream") {
      std::int64_t s = 0;
      if (field.value.get_int64().get(s) != simdjson::SUCCESS)
        throw bad("\"stream\" must be a whole number");
      stream = s;
    } else if (key == "name") {
      label = std::string(text);
    } else {
      throw bad("unknown key \"" + key + "\" (match, class, kind, category, stream, name)");
    }
  }
  if (!has_match) throw bad("a rule needs \"match\" (a regular expression over event names)");
  if (!cls) throw bad("a rule needs \"class\"");
  if (kind != CollectiveKind::None && *cls != ActivityClass::Communication)
    throw bad("\"kind\" is for communication rules only");
  try {
    return makeRule(pattern, category, stream, *cls, kind,
                    label.empty() ? where : where + " (" + label + ")");
  } catch (const std::regex_error& e) {
    throw bad("the regular expression \"" + pattern + "\" does not compile: " + e.what());
  }
}

std::vector<ClassRule> builtinRules() {
  std::vector<ClassRule> out;
  for (const auto& b : kBuiltin) {
    out.push_back(makeRule(b.pattern, b.category, std::nullopt, b.cls, b.kind, b.origin));
    for (const auto n : b.needles)
      if (!n.empty()) out.back().needles.push_back(n);
  }
  return out;
}

}  // namespace

std::string_view collectiveKindName(CollectiveKind k) {
  return kKindNames[static_cast<std::size_t>(k)];
}

std::optional<CollectiveKind> collectiveKindFromName(std::string_view name) {
  for (int k = 1; k < kCollectiveKindCount; ++k)
    if (kKindNames[k] == name) return static_cast<CollectiveKind>(k);
  return std::nullopt;
}

CollectiveKind collectiveKindOfKernel(std::string_view name) {
  const std::string n = lowerNoUnderscore(name);
  // Longer names first: "reducescatter" and "allreduce" both hold "reduce".
  static constexpr std::pair<std::string_view, CollectiveKind> kWords[] = {
      {"allreduce", CollectiveKind::AllReduce}, {"reducescatter", CollectiveKind::ReduceScatter},
      {"allgather", CollectiveKind::AllGather}, {"alltoall", CollectiveKind::AllToAll},
      {"sendrecv", CollectiveKind::SendRecv},   {"broadcast", CollectiveKind::Broadcast},
      {"send", CollectiveKind::SendRecv},       {"recv", CollectiveKind::SendRecv},
      {"reduce", CollectiveKind::Reduce},
  };
  for (const auto& [word, kind] : kWords)
    if (n.find(word) != std::string::npos) return kind;
  return CollectiveKind::Unknown;
}

std::optional<double> busBandwidthFactor(CollectiveKind k, std::int32_t ranks) {
  if (ranks < 2) return std::nullopt;
  const double n = static_cast<double>(ranks);
  switch (k) {
    case CollectiveKind::AllReduce:
      return 2.0 * (n - 1.0) / n;
    case CollectiveKind::ReduceScatter:
    case CollectiveKind::AllGather:
    case CollectiveKind::AllToAll:
      return (n - 1.0) / n;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Reduce:
    case CollectiveKind::SendRecv:
      return 1.0;
    default:
      return std::nullopt;
  }
}

std::shared_ptr<const ClassRules> ClassRules::builtin() {
  static const auto rules = [] {
    auto r = std::make_shared<ClassRules>();
    r->rules_ = builtinRules();
    return std::shared_ptr<const ClassRules>(r);
  }();
  return rules;
}

std::shared_ptr<const ClassRules> ClassRules::withUserRules(std::string_view text,
                                                            const std::string& origin) {
  auto out = std::make_shared<ClassRules>();
  simdjson::dom::parser parser;
  std::size_t line_no = 0, pos = 0;
  while (pos <= text.size()) {
    const auto eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? text.npos : eol - pos);
    pos = eol == std::string_view::npos ? text.size() + 1 : eol + 1;
    ++line_no;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front())))
      line.remove_prefix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
      line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    out->rules_.push_back(parseRuleLine(parser, line, origin + ":" + std::to_string(line_no)));
  }
  out->user_rules_ = out->rules_.size();
  out->description_ = origin + " (" + std::to_string(out->user_rules_) +
                      (out->user_rules_ == 1 ? " rule" : " rules") + "), then built-in";
  for (auto& r : builtinRules())
    out->rules_.push_back(std::move(r));
  for (const auto& r : out->rules_)
    out->depends_on_stream_ = out->depends_on_stream_ || r.stream.has_value();
  return out;
}

std::shared_ptr<const ClassRules> ClassRules::fromFile(const std::string& path) {
  // A folder opens as a stream that reads nothing: it would be a file of no rules.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw RulesError(path + ": is a folder, not a rules file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw RulesError(path + ": cannot read the rules file");
  std::ostringstream text;
  text << in.rdbuf();
  return withUserRules(text.str(), path);
}

std::shared_ptr<const ClassRules> ClassRules::forCommandLine(const std::string& rules_file) {
  if (!rules_file.empty()) return fromFile(rules_file);
  const char* env = std::getenv("DDPSCOPE_RULES");
  if (env != nullptr && *env != '\0') return fromFile(env);
  return builtin();
}

Classification ClassRules::classify(EventKind kind, std::string_view name,
                                    std::int64_t stream) const {
  Classification out;
  if (!trace::isGpuActivity(kind)) return out;
  const std::string_view category = trace::categoryName(kind);
  // std::regex recurses per character: a name is searched in its first kMaxMatched characters
  // (kernel names that long are template instantiations; what the rules look for comes first).
  constexpr std::size_t kMaxMatched = 1024;
  const std::string subject(name.substr(0, kMaxMatched));
  for (std::size_t i = 0; i < rules_.size(); ++i) {
    const auto& r = rules_[i];
    if (!r.category.empty() && r.category != category) continue;
    if (r.stream && *r.stream != stream) continue;
    if (!r.needles.empty() &&
        std::none_of(r.needles.begin(), r.needles.end(),
                     [&](std::string_view n) { return subject.find(n) != std::string::npos; }))
      continue;  // cannot match: the regular expression is spared
    if (!r.pattern.empty() && !std::regex_search(subject, r.re)) continue;
    out.cls = r.cls;
    out.rule = static_cast<std::int32_t>(i);
    if (r.cls == ActivityClass::Communication)
      out.kind = r.kind != CollectiveKind::None ? r.kind : collectiveKindOfKernel(name);
    return out;
  }
  // No rule matched (only possible for a category no rule covers): by the kind alone.
  out.cls = kind == EventKind::Sync     ? ActivityClass::Other
            : kind == EventKind::Kernel ? ActivityClass::Computation
                                        : ActivityClass::Memory;
  return out;
}

ActivityClass classify(EventKind kind, std::string_view name) {
  return ClassRules::builtin()->classify(kind, name, -1).cls;
}

ClassCache::ClassCache(std::shared_ptr<const ClassRules> rules, const trace::RankTrace& rank)
    : rules_(rules ? std::move(rules) : ClassRules::builtin()), rank_(rank) {
  slots_.resize(rules_->dependsOnStream() ? std::max<std::size_t>(1, rank.tracks.size()) : 1);
}

const Classification& ClassCache::fill(std::size_t track, EventKind kind,
                                       trace::NameId name) const {
  auto& slot = slots_[slots_.size() == 1 ? 0 : track];
  if (slot.empty())
    slot.assign(rank_.names.size() * 4,
                Classification{ActivityClass::None, CollectiveKind::None, kNotClassified});
  auto& c = slot[static_cast<std::size_t>(name) * 4 + static_cast<std::size_t>(kind)];
  if (c.rule == kNotClassified)
    c = rules_->classify(kind, rank_.names[name], rank_.tracks[track].stream());
  return c;
}

}  // namespace ddpscope::analysis
