// Classification rules (app/analysis/rules.h): the built-in rules keep the default
// classification, name the collective, and recognise communication in custom kernels (DeepEP,
// NVSHMEM, custom allreduce, symmetric memory); a user's rule file changes what they say, and a
// bad one is refused naming its line.
#include "app/analysis/rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
#include "tests/common/trace_builder.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;
using analysis::ActivityClass;
using analysis::ClassRules;
using analysis::CollectiveKind;
using trace::EventKind;

namespace {

analysis::Classification builtin(std::string_view name, EventKind kind = EventKind::Kernel,
                                 std::int64_t stream = 7) {
  return ClassRules::builtin()->classify(kind, name, stream);
}

std::string errorOf(std::string_view text) {
  try {
    ClassRules::withUserRules(text, "rules.jsonl");
  } catch (const analysis::RulesError& e) {
    return e.what();
  }
  return "";
}

// DeepEP-style expert-parallel communication in custom kernels on stream 20, beside compute on
// stream 7: dispatch [0, 1000) under gemm [500, 1500), combine [2000, 3000) alone.
trace::RankTrace deepEpTrace() {
  ddpscope::testing::TraceBuilder b;
  b.kernel("void deep_ep::internode::dispatch<8, 1024>(int4*, float*)", 0, 1'000, 20);
  b.kernel("ampere_bf16_gemm_128x128", 500, 1'000, 7);
  b.kernel("dpsk::ep::internode::combine<bf16>", 2'000, 1'000, 20);
  return b.build();
}

}  // namespace

TEST(Rules, BuiltInRulesKeepTheDefaultClassification) {
  EXPECT_EQ(builtin("ncclDevKernel_AllReduce_Sum_f32_RING_LL").cls, ActivityClass::Communication);
  EXPECT_EQ(builtin("ncclKernel_Broadcast_RING_LL_Sum_int8_t").cls, ActivityClass::Communication);
  EXPECT_EQ(builtin("void ncclKernel_AllGather(ncclWorkElem)").cls, ActivityClass::Communication);
  EXPECT_EQ(builtin("ncclSymkDevKernel_AllReduce").cls, ActivityClass::Communication);
  EXPECT_EQ(builtin("rcclKernel_x").cls, ActivityClass::Communication);
  EXPECT_EQ(builtin("hccl_allreduce").cls, ActivityClass::Communication);
  EXPECT_EQ(builtin("Memcpy DtoD (Device -> Device)").cls, ActivityClass::Memory);
  EXPECT_EQ(builtin("dma_copy").cls, ActivityClass::Memory);
  EXPECT_EQ(builtin("Event Sync").cls, ActivityClass::Other);
  EXPECT_EQ(builtin("Stream Wait Event").cls, ActivityClass::Other);
  EXPECT_EQ(builtin("volta_sgemm_128x64_nn").cls, ActivityClass::Computation);
  // Copies and synchronisations by their kind, whatever their name.
  EXPECT_EQ(builtin("[CUDA memcpy HtoD]", EventKind::Memcpy).cls, ActivityClass::Memory);
  EXPECT_EQ(builtin("cudaMemsetAsync", EventKind::Memset).cls, ActivityClass::Memory);
  EXPECT_EQ(builtin("cudaDeviceSynchronize", EventKind::Sync).cls, ActivityClass::Other);
  EXPECT_EQ(builtin("ProfilerStep#4", EventKind::GpuAnnotation).cls, ActivityClass::None);
  // The rule is named.
  const auto c = builtin("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  ASSERT_GE(c.rule, 0);
  EXPECT_EQ(ClassRules::builtin()->rules()[static_cast<std::size_t>(c.rule)].origin,
            "built-in: NCCL");
}

// A built-in rule's needles spare most names its regular expression: they must never skip a name
// the expression matches. Checked on every name of the real traces and on names made to match
// each alternative of each pattern (so that no rule's check is empty).
TEST(Rules, TheNeedlesNeverSkipANameThePatternMatches) {
  std::vector<std::string> names = {"ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                                    "void ncclKernel_AllGather(ncclWorkElem)",
                                    "nccl:all_reduce",
                                    "x_ncclDevKernel",
                                    "rcclKernel_x",
                                    "hipcclAllReduce",
                                    "hccl_allreduce",
                                    "void deep_ep::internode::dispatch<8, 1024>(int4*)",
                                    "dpsk::ep::intranode_ll::combine<bf16>",
                                    "deep_ep::internode::notify_dispatch",
                                    "nvshmemi_transfer_kernel",
                                    "cross_device_reduce_2stage<float>",
                                    "vllm::custom::all_reduce<half>",
                                    "sglang::x::AllReduce",
                                    "multimem_all_gather_kernel",
                                    "one_shot_all_reduce",
                                    "two_shot_reduce_scatter",
                                    "Memcpy DtoD (Device -> Device)",
                                    "Memset (Device)",
                                    "dma_copy",
                                    "Event Sync",
                                    "Stream Wait Event",
                                    "volta_sgemm_128x64_nn",
                                    "NCCL",
                                    "Sync",
                                    ""};
  for (const char* file :
       {"resnet50_ddp_rank0.json.gz", "resnet50_world1_rank0.json.gz",
        "alexnet_sync_events.json.gz", "rocm_mi250_tiny.json.gz", "triton_driver_launch.json.gz"}) {
    const auto t = trace::readTraceFile(std::string(DDPSCOPE_TEST_DATA) + "/" + file);
    for (std::size_t i = 0; i < t.names.size(); ++i)
      names.emplace_back(t.names[static_cast<trace::NameId>(i)]);
  }
  ASSERT_GT(names.size(), 500u);
  std::size_t rules_checked = 0;
  for (const auto& r : ClassRules::builtin()->rules()) {
    if (r.needles.empty()) continue;
    ++rules_checked;
    std::size_t matched = 0;
    for (const auto& full : names) {
      const std::string name = full.substr(0, 1024);  // what classify searches
      if (!std::regex_search(name, r.re)) continue;
      ++matched;
      EXPECT_TRUE(
          std::any_of(r.needles.begin(), r.needles.end(),
                      [&](std::string_view n) { return name.find(n) != std::string::npos; }))
          << r.origin << " matches \"" << name << "\" but holds none of its needles";
    }
    EXPECT_GT(matched, 0u) << r.origin << ": no name to check it on";
  }
  EXPECT_EQ(rules_checked, 8u);  // every built-in rule with a pattern
}

TEST(Rules, CollectiveKindsFromNamesAndBusBandwidthFactors) {
  const std::pair<const char*, CollectiveKind> cases[] = {
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", CollectiveKind::AllReduce},
      {"ncclKernel_ReduceScatter_RING_LL_Sum_bf16", CollectiveKind::ReduceScatter},
      {"ncclDevKernel_AllGather_RING_LL", CollectiveKind::AllGather},
      {"ncclDevKernel_SendRecv", CollectiveKind::SendRecv},
      {"ncclKernel_Broadcast_RING_LL_Sum_int8_t", CollectiveKind::Broadcast},
      {"ncclDevKernel_Reduce_Sum_f32_RING_LL", CollectiveKind::Reduce},
      {"two_shot_all_reduce_kernel<bf16>", CollectiveKind::AllReduce},
      {"multimem_all_gather_kernel", CollectiveKind::AllGather},
      {"vllm::cross_device_reduce_1stage<half, 8>", CollectiveKind::AllReduce},
      {"void deep_ep::internode::notify_dispatch(int*)", CollectiveKind::AllToAll},
      {"nvshmemi_transfer_kernel", CollectiveKind::Unknown},
  };
  for (const auto& [name, kind] : cases) {
    const auto c = builtin(name);
    EXPECT_EQ(c.cls, ActivityClass::Communication) << name;
    EXPECT_EQ(c.kind, kind) << name << " → " << analysis::collectiveKindName(c.kind);
  }
  // nccl-tests' factors over 8 ranks.
  EXPECT_DOUBLE_EQ(*analysis::busBandwidthFactor(CollectiveKind::AllReduce, 8), 2.0 * 7 / 8);
  for (auto k :
       {CollectiveKind::ReduceScatter, CollectiveKind::AllGather, CollectiveKind::AllToAll})
    EXPECT_DOUBLE_EQ(*analysis::busBandwidthFactor(k, 8), 7.0 / 8);
  for (auto k : {CollectiveKind::Broadcast, CollectiveKind::Reduce, CollectiveKind::SendRecv})
    EXPECT_DOUBLE_EQ(*analysis::busBandwidthFactor(k, 8), 1.0);
  EXPECT_FALSE(analysis::busBandwidthFactor(CollectiveKind::AllReduce, 1));
  EXPECT_FALSE(analysis::busBandwidthFactor(CollectiveKind::Unknown, 8));
}

TEST(Rules, CustomCommunicationKernelsAreCommunication) {
  // Before built-in DeepEP rules this trace had no communication and "100 %" efficiency.
  const auto r = analysis::analyzeRank(deepEpTrace());
  EXPECT_EQ(r.counts[static_cast<std::size_t>(ActivityClass::Communication)], 2);
  EXPECT_EQ(r.whole.comm_ns, 2'000);
  EXPECT_EQ(r.whole.overlap_ns, 500);
  ASSERT_TRUE(r.whole.overlap_pct);
  EXPECT_DOUBLE_EQ(*r.whole.overlap_pct, 25.0);
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].kind, CollectiveKind::AllToAll);
  EXPECT_EQ(r.collectives[0].count, 2);
  EXPECT_EQ(r.collectives[0].exposed_ns, 1'500);
  ASSERT_EQ(r.streams.size(), 2u);
  for (const auto& s : r.streams)
    EXPECT_EQ(s.role,
              s.stream == 20 ? analysis::StreamRole::Communication : analysis::StreamRole::Compute);
}

TEST(Rules, AUserRuleFileChangesTheClassification) {
  const auto trace = deepEpTrace();
  analysis::AnalysisOptions options;
  // The user says combine is computation here, and the gemm (say, a fused matmul-allgather) is
  // an all-gather: user rules come before the built-in ones.
  options.rules = ClassRules::withUserRules(
      "# my job's kernels\n"
      "{\"match\": \"::combine\", \"class\": \"computation\", \"name\": \"not a collective\"}\n"
      "\n"
      "{\"match\": \"^ampere_bf16_gemm\", \"class\": \"communication\", \"kind\": "
      "\"all_gather\"}\n",
      "my.jsonl");
  EXPECT_EQ(options.rules->userRuleCount(), 2u);
  const auto r = analysis::analyzeRank(trace, options);
  ASSERT_EQ(r.collectives.size(), 2u);  // in kind order: all_gather, all_to_all
  EXPECT_EQ(r.collectives[0].kind, CollectiveKind::AllGather);
  EXPECT_EQ(r.collectives[1].kind, CollectiveKind::AllToAll);
  EXPECT_EQ(r.collectives[1].count, 1);
  EXPECT_EQ(r.whole.comm_ns, 1'500);     // dispatch ∪ gemm
  EXPECT_EQ(r.whole.compute_ns, 1'000);  // combine
  const auto c =
      options.rules->classify(EventKind::Kernel, "dpsk::ep::internode::combine<bf16>", 20);
  EXPECT_EQ(options.rules->rules()[static_cast<std::size_t>(c.rule)].origin,
            "my.jsonl:2 (not a collective)");
  // A stream condition: everything on stream 20 is communication, whatever its name.
  const auto by_stream = ClassRules::withUserRules(
      "{\"match\": \"\", \"class\": \"communication\", \"stream\": 20, \"kind\": \"send_recv\"}",
      "s.jsonl");
  EXPECT_TRUE(by_stream->dependsOnStream());
  EXPECT_EQ(by_stream->classify(EventKind::Kernel, "my_kernel", 20).kind, CollectiveKind::SendRecv);
  EXPECT_EQ(by_stream->classify(EventKind::Kernel, "my_kernel", 7).cls, ActivityClass::Computation);
}

TEST(Rules, ABadRuleFileIsRefusedNamingTheLine) {
  EXPECT_EQ(errorOf("{\"match\": \"x\", \"class\": \"computation\"}\n\n{\"match\": \"([\", "
                    "\"class\": \"computation\"}")
                .find("rules.jsonl:3: the regular expression \"([\" does not compile"),
            0u);
  EXPECT_NE(errorOf("# ok\n{\"match\": \"x\", \"class\": \"network\"}")
                .find("rules.jsonl:2: "
                      "unknown class"),
            std::string::npos);
  EXPECT_NE(errorOf("{\"match\": \"x\", \"class\": \"memory\", \"kind\": \"allreduce\"}")
                .find("\"kind\" is for communication rules only"),
            std::string::npos);
  EXPECT_NE(errorOf("{\"match\": \"x\", \"class\": \"memory\", \"class\": \"other\"}")
                .find("\"class\" is given twice"),
            std::string::npos);
  EXPECT_NE(errorOf("{\"regex\": \"x\", \"class\": \"memory\"}").find("unknown key \"regex\""),
            std::string::npos);
  EXPECT_NE(errorOf("{\"class\": \"memory\"}").find("needs \"match\""), std::string::npos);
  EXPECT_NE(errorOf("{\"match\": \"x\", \"class\": \"communication\", \"kind\": \"allgather\"}")
                .find("unknown collective kind \"allgather\""),
            std::string::npos);
  EXPECT_NE(errorOf("match: x").find("rules.jsonl:1: not a JSON object"), std::string::npos);
  EXPECT_NE(errorOf("{\"match\": \"x\", \"class\": \"other\", \"stream\": \"7\"}")
                .find("\"stream\" must be a whole number"),
            std::string::npos);
  try {
    ClassRules::fromFile("/no/such/rules.jsonl");
    FAIL() << "expected an error";
  } catch (const analysis::RulesError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos);
  }
  // A folder reads as nothing, which would be a file of no rules: refused, saying so.
  try {
    ClassRules::fromFile(std::filesystem::temp_directory_path().string());
    FAIL() << "expected an error";
  } catch (const analysis::RulesError& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder, not a rules file"), std::string::npos);
  }
}
