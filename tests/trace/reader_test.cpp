#include <gtest/gtest.h>

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>

#include "tracer/format/file_io.h"
#include "tracer/format/json_text.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope::trace;

namespace {

std::string dataPath(const std::string& name) {
  return std::string(DDPSCOPE_TEST_DATA) + "/" + name;
}

std::map<EventKind, std::int64_t> countKinds(const RankTrace& t) {
  std::map<EventKind, std::int64_t> n;
  for (const auto& track : t.tracks) {
    for (auto k : track.kind_of)
      n[k]++;
  }
  return n;
}

std::set<std::pair<std::int64_t, std::int64_t>> gpuTracks(const RankTrace& t) {
  std::set<std::pair<std::int64_t, std::int64_t>> s;
  for (const auto& track : t.tracks) {
    if (track.kind != TrackKind::Gpu) continue;
    bool activity = false;
    for (auto k : track.kind_of)
      activity = activity || isGpuActivity(k);
    if (activity) s.insert({track.device(), track.stream()});
  }
  return s;
}

std::vector<std::int32_t> stepNumbers(const RankTrace& t) {
  std::vector<std::int32_t> v;
  for (const auto& s : t.steps)
    v.push_back(s.number);
  return v;
}

}  // namespace

TEST(KinetoReader, Resnet50DdpRank0) {
  const RankTrace t = readTraceFile(dataPath("resnet50_ddp_rank0.json.gz"));
  auto kinds = countKinds(t);
  EXPECT_EQ(kinds[EventKind::Kernel], 2700);
  EXPECT_EQ(kinds[EventKind::Memcpy], 960);
  EXPECT_EQ(kinds[EventKind::Memset], 114);
  EXPECT_EQ(kinds[EventKind::Runtime], 8740);
  EXPECT_EQ(kinds[EventKind::CpuOp], 14346);
  EXPECT_EQ(kinds[EventKind::GpuAnnotation], 30);
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.distributed_backend, "nccl");
  EXPECT_EQ(t.source(), "imported");
  EXPECT_EQ(gpuTracks(t), (std::set<std::pair<std::int64_t, std::int64_t>>{{0, 7}, {0, 40}}));
  EXPECT_EQ(stepNumbers(t), (std::vector<std::int32_t>{4, 5, 6}));
  // Absolute time is kept: baseTimeNanoseconds + ts, with ns digits.
  EXPECT_GT(t.base_time_ns, 1711964646000000000);
  // An NCCL allreduce carries its payload: In msg nelems 6637568 x Float.
  bool found = false;
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      if (track.correlation[i] == 60047 && track.kind_of[i] == EventKind::Kernel) {
        EXPECT_EQ(track.bytes[i], 6637568LL * 4);
        EXPECT_TRUE(t.names[track.name[i]].starts_with("ncclKernel_AllReduce"));
        found = true;
        EXPECT_EQ(track.stream(), 40);
        EXPECT_EQ(track.dur[i], 2636669);  // 2636.669 µs, exact
      }
    }
  }
  EXPECT_TRUE(found);
  EXPECT_GT(t.flows.size(), 3000u);
  EXPECT_EQ(t.process_names.at(0), "python3.10");
}

TEST(KinetoReader, EventsAreSortedAndRebased) {
  const RankTrace t = readTraceFile(dataPath("resnet50_ddp_rank0.json.gz"));
  TimeNs earliest = std::numeric_limits<TimeNs>::max();
  for (const auto& track : t.tracks) {
    for (std::size_t i = 1; i < track.size(); ++i)
      ASSERT_LE(track.start[i - 1], track.start[i]);
    if (track.size()) earliest = std::min(earliest, track.start[0]);
  }
  for (const auto& f : t.flows)
    earliest = std::min({earliest, f.from_ts, f.to_ts});
  EXPECT_EQ(earliest, 0);
  // The first allreduce started at 4458677009853.422 µs after 1711964646000000000 ns.
  const TimeNs absolute = 1711964646000000000 + 4458677009853422;
  bool found = false;
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      if (track.correlation[i] == 60047 && track.kind_of[i] == EventKind::Kernel) {
        EXPECT_EQ(t.base_time_ns + track.start[i], absolute);
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);
}

TEST(KinetoReader, World1HasNoCommunicationStream) {
  const RankTrace t = readTraceFile(dataPath("resnet50_world1_rank0.json.gz"));
  auto kinds = countKinds(t);
  EXPECT_EQ(kinds[EventKind::Kernel], 4350);
  EXPECT_EQ(kinds[EventKind::Memcpy], 1600);
  EXPECT_EQ(kinds[EventKind::Memset], 145);
  EXPECT_EQ(t.world_size, 1);
  EXPECT_EQ(gpuTracks(t), (std::set<std::pair<std::int64_t, std::int64_t>>{{0, 7}}));
  EXPECT_EQ(stepNumbers(t), (std::vector<std::int32_t>{101, 102, 103, 104, 105}));
}

TEST(KinetoReader, AlexnetSyncEventsOnTheirStreams) {
  const RankTrace t = readTraceFile(dataPath("alexnet_sync_events.json.gz"));
  auto kinds = countKinds(t);
  EXPECT_EQ(kinds[EventKind::Kernel], 79);
  EXPECT_EQ(kinds[EventKind::Sync], 41);
  EXPECT_EQ(kinds[EventKind::Memcpy], 16);
  EXPECT_EQ(kinds[EventKind::Memset], 3);
  EXPECT_EQ(gpuTracks(t),
            (std::set<std::pair<std::int64_t, std::int64_t>>{{0, 7}, {0, 20}, {0, 4294967295}}));
  EXPECT_TRUE(t.steps.empty());
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.world_size, 1);
}

TEST(KinetoReader, RocmTraceOnDeviceTwoStreamZero) {
  const RankTrace t = readTraceFile(dataPath("rocm_mi250_tiny.json.gz"));
  auto kinds = countKinds(t);
  EXPECT_EQ(kinds[EventKind::Kernel], 14);
  EXPECT_EQ(kinds[EventKind::Memcpy], 2);
  EXPECT_EQ(gpuTracks(t), (std::set<std::pair<std::int64_t, std::int64_t>>{{2, 0}}));
  EXPECT_EQ(stepNumbers(t), (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(t.rank, 0);  // no distributedInfo
}

TEST(KinetoReader, TritonDriverLaunchIsLinkedToItsKernel) {
  const RankTrace t = readTraceFile(dataPath("triton_driver_launch.json.gz"));
  auto kinds = countKinds(t);
  EXPECT_EQ(kinds[EventKind::Kernel], 1);
  EXPECT_EQ(kinds[EventKind::Driver], 1);
  // cuLaunchKernel (correlation 35) -> triton_poi_fused_add_cos_sin_0 (correlation 35).
  std::int64_t driver_corr = -2, kernel_corr = -3;
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      if (track.kind_of[i] == EventKind::Driver) driver_corr = track.correlation[i];
      if (track.kind_of[i] == EventKind::Kernel) kernel_corr = track.correlation[i];
    }
  }
  EXPECT_EQ(driver_corr, 35);
  EXPECT_EQ(kernel_corr, 35);
  ASSERT_EQ(t.flows.size(), 1u);
  EXPECT_EQ(t.tracks[static_cast<std::size_t>(t.flows[0].to_track)].kind, TrackKind::Gpu);
  EXPECT_EQ(t.tracks[static_cast<std::size_t>(t.flows[0].from_track)].kind, TrackKind::Host);
}

TEST(KinetoReader, PlainJsonAndBareArrayAndIntegerMicroseconds) {
  const std::string text = R"([
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5,
     "args": {"stream": 7, "device": 0}},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 3.5, "dur": 0.25}
  ])";
  const RankTrace t = parseTraceText(text);
  ASSERT_EQ(t.tracks.size(), 1u);
  ASSERT_EQ(t.tracks[0].size(), 2u);
  EXPECT_EQ(t.tracks[0].start[0], 0);  // rebased: 3.5 µs is the earliest
  EXPECT_EQ(t.tracks[0].dur[0], 250);
  EXPECT_EQ(t.tracks[0].start[1], 6500);
  EXPECT_EQ(t.base_time_ns, 3500);
}

// A host thread (pid 0, tid 7) and a GPU stream (device 0, stream 7) share their numbers: a flow
// end that names its device or stream in args goes to the GPU track, one that does not to the
// host track (the rule for files that never say).
TEST(KinetoReader, FlowEndsNamingTheirDeviceGoToTheGpuTrack) {
  const std::string text = R"([
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, "tid": 7,
     "ts": 1, "dur": 2},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 5,
     "args": {"device": 0, "stream": 7}},
    {"ph": "s", "id": 1, "pid": 0, "tid": 7, "ts": 1, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "bp": "e", "id": 1, "pid": 0, "tid": 7, "ts": 5, "cat": "ac2g", "name": "ac2g",
     "args": {"device": 0, "stream": 7}},
    {"ph": "s", "id": 2, "pid": 0, "tid": 7, "ts": 1, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "bp": "e", "id": 2, "pid": 0, "tid": 7, "ts": 5, "cat": "ac2g", "name": "ac2g",
     "args": {"stream": 7}},
    {"ph": "s", "id": 3, "pid": 0, "tid": 7, "ts": 1, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "bp": "e", "id": 3, "pid": 0, "tid": 7, "ts": 5, "cat": "ac2g", "name": "ac2g"}
  ])";
  const RankTrace t = parseTraceText(text);
  ASSERT_EQ(t.tracks.size(), 2u);
  ASSERT_EQ(t.flows.size(), 3u);
  for (const auto& f : t.flows) {
    const auto& from = t.tracks[static_cast<std::size_t>(f.from_track)];
    const auto& to = t.tracks[static_cast<std::size_t>(f.to_track)];
    EXPECT_EQ(from.kind, TrackKind::Host) << f.id;
    EXPECT_EQ(to.kind, f.id == 3 ? TrackKind::Host : TrackKind::Gpu) << f.id;
    EXPECT_EQ(to.pid, 0);
    EXPECT_EQ(to.tid, 7);
  }
  // Written and read back, the GPU ends stay on the GPU track.
  const RankTrace back = parseTraceText(serializeTrace(t));
  EXPECT_EQ(describeDifference(t, back), "");
}

// An end that names a device and stream whose GPU track the file lacks is dropped with its flow:
// the host thread that happens to carry those numbers (pid 0, tid 9) is not where it ends.
TEST(KinetoReader, AFlowEndNamingAMissingGpuTrackIsNotPutOnAHostThread) {
  const std::string text = R"([
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, "tid": 7,
     "ts": 1, "dur": 2},
    {"ph": "X", "cat": "cpu_op", "name": "other thread", "pid": 0, "tid": 9, "ts": 1, "dur": 2},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 5,
     "args": {"device": 0, "stream": 7}},
    {"ph": "s", "id": 1, "pid": 0, "tid": 7, "ts": 1, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "bp": "e", "id": 1, "pid": 0, "tid": 7, "ts": 5, "cat": "ac2g", "name": "ac2g",
     "args": {"device": 0, "stream": 9}},
    {"ph": "s", "id": 2, "pid": 0, "tid": 7, "ts": 1, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "bp": "e", "id": 2, "pid": 0, "tid": 7, "ts": 5, "cat": "ac2g", "name": "ac2g",
     "args": {"device": 0, "stream": 7}}
  ])";
  const RankTrace t = parseTraceText(text);
  ASSERT_EQ(t.tracks.size(), 3u);  // host 0/7, host 0/9, GPU 0/7
  ASSERT_EQ(t.flows.size(), 1u);
  const Flow& f = t.flows[0];
  EXPECT_EQ(f.id, 2u);
  const auto& to = t.tracks[static_cast<std::size_t>(f.to_track)];
  EXPECT_EQ(to.kind, TrackKind::Gpu);
  EXPECT_EQ(to.pid, 0);
  EXPECT_EQ(to.tid, 7);
}

// The reader parses the usual number forms on a fast path and everything else through the
// general parsers: each form must read as parseMicrosToNs and from_chars read it.
TEST(KinetoReader, NumberFormsReadAsTheGeneralParsersReadThem) {
  const std::vector<std::string> times = {"0",
                                          "7",
                                          "5247.995",
                                          "5247.9951",
                                          "5247.9955",
                                          "12.5",
                                          "12.50",
                                          "0.001",
                                          "1.5e3",
                                          "2E2",
                                          "1.0004",
                                          "0012.345",
                                          "12.345 ",
                                          "-3.250",
                                          "-0.5",
                                          "999999999999999.999",
                                          "1000000000000000.5",
                                          "123456789012345",
                                          "3.",
                                          "1.0e-3"};
  const std::vector<std::string> ids = {
      "0",  "7", "-7", "0012", "123456789012345678", "1234567890123456789", "-9223372036854775808",
      "42 "};
  std::string text = "[\n";
  std::vector<std::int64_t> want_ts, want_dur, want_id;
  for (std::size_t i = 0; i < times.size(); ++i) {
    std::int64_t ts = 0;
    if (!parseMicrosToNs(times[i], ts)) continue;  // "3." is not JSON: not written
    const std::string& dur = times[(i + 3) % times.size()];
    std::int64_t d = 0;
    if (!parseMicrosToNs(dur, d) || d < 0) continue;
    const std::string& id = ids[i % ids.size()];
    std::int64_t n = 0;
    const std::string trimmed = id.substr(0, id.find(' '));
    std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), n);
    if (!want_ts.empty()) text += ",\n";
    text += R"({"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": )" +
            std::to_string(want_ts.size()) + R"(, "ts": )" + times[i] + R"(, "dur": )" + dur +
            R"(, "args": {"correlation": )" + id + "}}";
    want_ts.push_back(ts);
    want_dur.push_back(d);
    want_id.push_back(n);
  }
  text += "\n]";
  ASSERT_GE(want_ts.size(), 12u);
  const RankTrace t = parseTraceText(text);
  ASSERT_EQ(t.tracks.size(), want_ts.size());
  for (std::size_t i = 0; i < want_ts.size(); ++i) {
    const Track& track = t.tracks[i];  // one track per event, in the order of the document
    ASSERT_EQ(track.tid, static_cast<std::int64_t>(i));
    ASSERT_EQ(track.size(), 1u);
    EXPECT_EQ(track.start[0] + t.base_time_ns, want_ts[i]) << "event " << i;
    EXPECT_EQ(track.dur[0], want_dur[i]) << "event " << i;
    EXPECT_EQ(track.correlation[0], want_id[i]) << "event " << i;
  }
}

TEST(KinetoReader, UnknownFieldsAndPhasesAreIgnored) {
  const std::string text = R"({"schemaVersion": 1, "whatever": {"a": [1, 2, {"b": null}]},
    "traceEvents": [
      {"ph": "C", "name": "counter", "pid": 1, "tid": 1, "ts": 1, "args": {"x": 1}},
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
       "extra": [1, 2, 3], "args": {"stream": 7, "unknown": {"deep": [true]}}}
    ], "trailer": "ok"})";
  const RankTrace t = parseTraceText(text);
  EXPECT_EQ(t.eventCount(), 1u);
  ASSERT_EQ(t.warnings.size(), 1u);  // the counter event
  EXPECT_NE(t.warnings[0].find("unsupported phases"), std::string::npos);
}

// The collective arguments PyTorch's profiler writes on NCCL kernels are kept per kernel (by
// correlation id); a number as the process group (older profilers' "Process Group ID") is read
// as its text, and host events' arguments are not kept.
TEST(KinetoReader, CollectiveArgumentsAreKeptByCorrelation) {
  const std::string text = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "pid": 0, "tid": 7,
     "ts": 10, "dur": 5, "args": {"stream": 7, "correlation": 42, "Collective name": "allgather",
     "In msg nelems": 1024, "Out msg nelems": 4096, "Group size": 4, "dtype": "BFloat16",
     "Process Group Name": "3", "Process Group Description": "fsdp_shard",
     "Process Group Ranks": "[0, 1, 2, 3]", "Seq": 17}},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 20,
     "dur": 5, "args": {"stream": 7, "correlation": 9, "Collective name": "allreduce",
     "Process Group ID": 0, "In msg nelems": 8, "dtype": "Float"}},
    {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 9,
     "dur": 1, "args": {"Collective name": "allgather", "Process Group Name": "3"}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 30, "dur": 1,
     "args": {"stream": 7, "correlation": 50}}
  ]})";
  const RankTrace t = parseTraceText(text);
  ASSERT_EQ(t.collective_args.size(), 2u);
  const CollectiveArgs* ag = t.collectiveArgs(42);
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ag->name, "allgather");
  EXPECT_EQ(ag->group, "3");
  EXPECT_EQ(ag->group_desc, "fsdp_shard");
  EXPECT_EQ(ag->group_ranks, "[0, 1, 2, 3]");
  EXPECT_EQ(ag->seq, 17);
  EXPECT_EQ(ag->in_nelems, 1024);
  EXPECT_EQ(ag->out_nelems, 4096);
  EXPECT_EQ(ag->group_size, 4);
  EXPECT_EQ(ag->dtype, "BFloat16");
  const CollectiveArgs* ar = t.collectiveArgs(9);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->group, "0");
  EXPECT_EQ(ar->seq, -1);
  EXPECT_EQ(t.collectiveArgs(50), nullptr);
  EXPECT_EQ(t.collectiveArgs(kNoCorrelation), nullptr);
}

// The content hash is XXH3 (64 bits, seed 0), as `xxhsum -H3` prints it: the expected values
// below were computed by xxhsum, not by ddpscope.
TEST(FileContentHash, IsXxh3AsXxhsumPrintsIt) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-hash-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir / name, std::ios::binary) << bytes;
    return (dir / name).string();
  };
  EXPECT_EQ(hashHex(fileContentHash(write("empty", ""))), "2d06800538d394c2");
  EXPECT_EQ(hashHex(fileContentHash(write("small", "fake report 1\n"))), "2ce8ac1577726d38");
  // Over several reads of a MiB: byte i is i * 131 mod 251, 3 MiB and 5 bytes.
  std::string big(std::size_t{3} * (1 << 20) + 5, '\0');
  for (std::size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>((i * 131) % 251);
  std::vector<std::uint64_t> seen;
  const auto path = write("big", big);
  EXPECT_EQ(hashHex(fileContentHash(path, [&](std::uint64_t done) { seen.push_back(done); })),
            "7377149635c7f1ff");
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{1u << 20, 2u << 20, 3u << 20, big.size()}));
  // What the callback throws stops the hash (cancel); a missing file is an error naming it.
  EXPECT_THROW(fileContentHash(path, [](std::uint64_t) { throw std::runtime_error("stop"); }),
               std::runtime_error);
  try {
    fileContentHash((dir / "missing").string());
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
  EXPECT_THROW(fileContentHash(dir.string()), TraceError);  // a folder
  std::filesystem::remove_all(dir);
}
