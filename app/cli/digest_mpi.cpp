// `ddpscope-cli digest` under mpirun/srun: each process reads its share of the files (file i goes
// to process i mod N), the partials travel to process 0, and it writes the digest a single
// process would have written (docs/DIGEST.md). Built into ddpscope-cli-mpi when MPI was found
// (DDPSCOPE_HAVE_MPI); ddpscope-cli runs that program in its place (digest_mpi_exec.cpp).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "app/analysis/digest.h"
#include "app/analysis/rules.h"
#include "app/cli/digest_command.h"
#include "tracer/format/file_io.h"
#include "tracer/format/parallel.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::cli {

namespace {

// Waits for requests without spinning. MPI's blocking calls poll at full speed; a process that
// finished its share and waits for process 0 (or process 0 waiting for a slower one) would take
// a core from the processes still reading when there are more processes than cores.
// The sleep starts at 10 µs and doubles up to 0.5 ms: a transfer that is about to complete (process
// 0 taking the partials of a thousand processes in turn) is not held up by a whole sleep.
void waitQuietly(std::vector<MPI_Request>& requests) {
  int done = 0;
  std::chrono::microseconds sleep(10);
  for (;;) {
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(500));
  }
}

// Bytes from one process to another in pieces MPI's int counts can hold.
void sendBytes(const std::string& bytes, int to) {
  const std::uint64_t n = bytes.size();
  std::vector<MPI_Request> requests(1);
  MPI_Isend(&n, 1, MPI_UINT64_T, to, 0, MPI_COMM_WORLD, &requests[0]);
  for (std::uint64_t at = 0; at < n; at += INT_MAX) {
    const int piece = static_cast<int>(std::min<std::uint64_t>(INT_MAX, n - at));
    MPI_Isend(bytes.data() + at, piece, MPI_BYTE, to, 1, MPI_COMM_WORLD, &requests.emplace_back());
  }
  waitQuietly(requests);
}

// The rest of a message from `from` whose length `n` has arrived.
std::string receiveBytes(int from, std::uint64_t n) {
  std::string bytes(n, '\0');
  std::vector<MPI_Request> requests;
  for (std::uint64_t at = 0; at < n; at += INT_MAX) {
    const int piece = static_cast<int>(std::min<std::uint64_t>(INT_MAX, n - at));
    MPI_Irecv(bytes.data() + at, piece, MPI_BYTE, from, 1, MPI_COMM_WORLD,
              &requests.emplace_back());
  }
  waitQuietly(requests);
  return bytes;
}

// Every other process's message, in the order they finish (a fast process's partial is taken,
// and decoded by `take`, while a slower one still reads), without spinning.
template <typename Take>
void receiveFromAll(int processes, Take take) {
  const auto others = static_cast<std::size_t>(processes - 1);
  std::vector<std::uint64_t> sizes(others, 0);
  std::vector<MPI_Request> requests(others);
  for (std::size_t i = 0; i < others; ++i)
    MPI_Irecv(&sizes[i], 1, MPI_UINT64_T, static_cast<int>(i + 1), 0, MPI_COMM_WORLD, &requests[i]);
  std::chrono::microseconds sleep(10);
  for (std::size_t left = others; left > 0;) {
    int index = MPI_UNDEFINED, done = 0;
    MPI_Testany(static_cast<int>(requests.size()), requests.data(), &index, &done,
                MPI_STATUS_IGNORE);
    if (!done || index == MPI_UNDEFINED) {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::microseconds(500));
      continue;
    }
    sleep = std::chrono::microseconds(10);
    --left;
    const int from = index + 1;
    take(from, receiveBytes(from, sizes[static_cast<std::size_t>(index)]));
  }
}

// MPI_Bcast from process 0, waiting quietly.
void broadcast(void* data, int count, MPI_Datatype type) {
  std::vector<MPI_Request> requests(1);
  MPI_Ibcast(data, count, type, 0, MPI_COMM_WORLD, &requests[0]);
  waitQuietly(requests);
}

}  // namespace

int runDigestMpi(const DigestArgs& a) {
  // Set by ddpscope-cli when it ran this program (digest_mpi_exec.cpp): not for what this runs.
  ::unsetenv("DDPSCOPE_CLI_MPI_EXEC");
  MPI_Init(nullptr, nullptr);
  int me = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  analysis::DigestOptions options;
  options.threads = a.threads;
  options.skip_unreadable = a.skip_unreadable;
  if (options.threads == 0) {
    // Without --threads, the processes on one machine share its cores (mpirun -n 8 on a node
    // of 32: 4 threads each; srun binding each task to its CPUs: those) instead of each taking
    // them all, which ran N times as many threads as cores there (trace::shareOfMachine).
    MPI_Comm node = MPI_COMM_NULL;
    int on_node = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, me, MPI_INFO_NULL, &node) ==
            MPI_SUCCESS &&
        node != MPI_COMM_NULL) {
      MPI_Comm_size(node, &on_node);
      MPI_Comm_free(&node);
    }
    options.threads =
        trace::shareOfMachine(std::max(1u, std::thread::hardware_concurrency()),
                              trace::allowedCores(), static_cast<unsigned>(std::max(1, on_node)));
  }
  // Each process reads its files; a failure travels to process 0 as a message (first byte 0).
  std::string message;
  std::vector<std::string> skipped_files;  // (process 0's listing)
  // Process 0 lists the files and tells the others, so that every process splits one list
  // (a folder still being written, or seen late over a network file system, could differ).
  std::string listing;
  if (me == 0) {
    try {
      const auto files = trace::expandTracePaths(a.paths, &skipped_files);
      trace::refuseRepeatedFiles(files);
      for (const auto& f : files)
        listing += f + '\n';
    } catch (const std::exception& e) {
      message = std::string(1, '\0') + e.what();
    }
  }
  std::uint64_t listing_size = listing.size();
  broadcast(&listing_size, 1, MPI_UINT64_T);
  listing.resize(listing_size);
  for (std::uint64_t at = 0; at < listing_size; at += INT_MAX) {
    broadcast(listing.data() + at,
              static_cast<int>(std::min<std::uint64_t>(INT_MAX, listing_size - at)), MPI_BYTE);
  }
  try {
    if (!message.empty()) throw std::runtime_error(message.substr(1));
    options.analysis.rules = analysis::ClassRules::forCommandLine(a.rules_file);
    std::vector<std::string> files;
    for (std::size_t at = 0; at < listing.size();) {
      const auto end = listing.find('\n', at);
      files.push_back(listing.substr(at, end - at));
      at = end + 1;
    }
    if (files.empty()) throw std::runtime_error("no trace files found");
    std::vector<std::string> mine;
    std::vector<std::size_t> indices;
    for (std::size_t i = static_cast<std::size_t>(me); i < files.size();
         i += static_cast<std::size_t>(processes)) {
      mine.push_back(files[i]);
      indices.push_back(i);
    }
    std::vector<analysis::UnreadableFile> unreadable;
    const auto parts = analysis::digestFiles(mine, options, indices, &unreadable);
    message = '\1' + analysis::encodePartials(parts, unreadable);
  } catch (const std::exception& e) {
    message = std::string(1, '\0') + "process " + std::to_string(me) + ": " + e.what();
  }
  int rc = 0;
  if (me != 0) {
    sendBytes(message, 0);
  } else {
    // Per process, its partials or its error; merged and reported in process order whatever
    // order they came in (the digest is the same bytes either way).
    std::vector<std::vector<analysis::RankPartial>> by_process(static_cast<std::size_t>(processes));
    std::vector<std::string> errors(static_cast<std::size_t>(processes));
    std::vector<std::vector<analysis::UnreadableFile>> unreadable(
        static_cast<std::size_t>(processes));
    auto take = [&](int p, const std::string& bytes) {
      auto& error = errors[static_cast<std::size_t>(p)];
      if (bytes.empty() || bytes[0] == '\0') {
        error = bytes.empty() ? "no answer" : bytes.substr(1);
        return;
      }
      try {
        by_process[static_cast<std::size_t>(p)] = analysis::decodePartials(
            std::string_view(bytes).substr(1), &unreadable[static_cast<std::size_t>(p)]);
      } catch (const std::exception& e) {
        error = "process " + std::to_string(p) + ": " + e.what();
      }
    };
    take(0, message);
    receiveFromAll(processes, take);
    std::vector<analysis::RankPartial> parts;
    std::vector<analysis::UnreadableFile> left_out;  // put in file order by finishDigest
    for (const auto& u : unreadable)
      left_out.insert(left_out.end(), u.begin(), u.end());
    for (int p = 0; p < processes; ++p) {
      if (!errors[static_cast<std::size_t>(p)].empty()) {
        std::cerr << "ddpscope-cli: " << errors[static_cast<std::size_t>(p)] << "\n";
        rc = 1;
      }
      for (auto& part : by_process[static_cast<std::size_t>(p)])
        parts.push_back(std::move(part));
    }
    if (rc == 0) {
      try {
        const std::string digest = analysis::finishDigest(parts, options, skipped_files, left_out);
        if (a.out.empty()) {
          std::cout << digest;
        } else {
          trace::writeFileAtomically(a.out,
                                     a.out.ends_with(".gz") ? trace::gzipBytes(digest) : digest);
          std::cerr << "wrote " << a.out << " (" << digest.size() << " bytes of JSON, " << processes
                    << (processes == 1 ? " process)\n" : " processes)\n");
        }
      } catch (const std::exception& e) {
        std::cerr << "ddpscope-cli: " << e.what() << "\n";
        rc = 1;
      }
    }
  }
  broadcast(&rc, 1, MPI_INT);
  MPI_Finalize();
  return rc;
}

}  // namespace ddpscope::cli
