// Run by mpirun with three processes (tests/agent_bootstrap/CMakeLists.txt). Each process is a
// rank; every check is real MPI. Exits non-zero on the first failed check (mpirun then fails).
//   broadcast: a random 128-byte blob (and a 1 MiB one) from rank 0 reaches every rank, checked by
//              gathering all ranks' copies on rank 0; a size or rank that MPI does not agree with
//              is an error on every rank (no rank left waiting); the bootstrap finalizes MPI.
//   mismatch:  a bootstrap that initialized MPI itself, told a wrong world size, throws the clear
//              error on every rank and finalizes MPI.
#include <mpi.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/bootstrap/bootstrap.h"

using ddpscope::agent::bootstrap::makeMpiBootstrap;
using ddpscope::agent::bootstrap::MpiBootstrapOptions;

namespace {

int g_rank = -1;

[[noreturn]] void fail(const std::string& why) {
  std::cerr << "rank " << g_rank << ": FAILED: " << why << std::endl;
  std::exit(1);
}

void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

int envInt(const char* a, const char* b) {
  for (const char* name : {a, b}) {
    const char* v = std::getenv(name);
    if (!v) continue;
    int out = -1;
    std::from_chars(v, v + std::strlen(v), out);
    return out;
  }
  fail(std::string("neither ") + a + " nor " + b + " is set: run this under mpirun");
}

std::vector<char> randomBytes(std::size_t n) {
  std::random_device rd;
  std::mt19937 gen(rd());
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<char> v(n);
  for (char& c : v)
    c = static_cast<char>(byte(gen));
  return v;
}

// Rank 0 draws the blob, the bootstrap broadcasts it, rank 0 gathers every rank's copy and
// compares; all ranks learn the verdict.
void checkBroadcast(ddpscope::agent::bootstrap::Bootstrap& b, int rank, int size, std::size_t n) {
  const std::vector<char> sent = rank == 0 ? randomBytes(n) : std::vector<char>();
  std::vector<char> mine(n, 0);
  if (rank == 0) mine = sent;
  b.broadcast(mine);
  std::vector<char> all(rank == 0 ? n * static_cast<std::size_t>(size) : 0);
  check(MPI_Gather(mine.data(), static_cast<int>(n), MPI_BYTE, all.data(), static_cast<int>(n),
                   MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
        "MPI_Gather");
  int bad = 0;
  if (rank == 0) {
    for (int r = 0; r < size; ++r) {
      if (std::memcmp(all.data() + n * static_cast<std::size_t>(r), sent.data(), n) != 0) {
        std::cerr << "rank " << r << " did not get rank 0's " << n << " bytes\n";
        ++bad;
      }
    }
  }
  check(MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bcast verdict");
  check(bad == 0, std::to_string(bad) + " rank(s) got other bytes than rank 0's " +
                      std::to_string(n) + "-byte blob");
}

std::string mismatchError(const MpiBootstrapOptions& o) {
  try {
    makeMpiBootstrap(o);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  fail("a bootstrap told rank " + std::to_string(o.rank) + " of " + std::to_string(o.world_size) +
       " did not throw");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "broadcast";
  const int rank = envInt("OMPI_COMM_WORLD_RANK", "PMI_RANK");
  const int size = envInt("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
  g_rank = rank;
  check(size == 3, "expected 3 processes, the launcher started " + std::to_string(size));
  const std::string ours = "MPI_COMM_WORLD has 3 process(es) and this one is rank " +
                           std::to_string(rank) + ", but mpirun's environment says rank ";

  if (mode == "mismatch") {
    const std::string e = mismatchError({rank, size + 1, "mpirun"});
    check(contains(e, ours + std::to_string(rank) + " of 4") &&
              contains(e, "DDPSCOPE_BOOTSTRAP=file"),
          "unexpected message: " + e);
    int finalized = 0;
    MPI_Finalized(&finalized);
    check(finalized == 1, "the bootstrap that initialized MPI did not finalize it after the error");
    std::cout << "rank " << rank << ": ok (" << e << ")" << std::endl;
    return 0;
  }
  check(mode == "broadcast", "unknown mode " + mode);

  int initialized = 1;
  MPI_Initialized(&initialized);
  check(initialized == 0, "MPI was initialized before the bootstrap");
  auto b = makeMpiBootstrap({rank, size, "mpirun"});
  MPI_Initialized(&initialized);
  check(initialized == 1, "the bootstrap did not initialize MPI");
  check(contains(b->describe(), "mpi ("), "describe(): " + b->describe());
  for (int round = 0; round < 3; ++round)
    checkBroadcast(*b, rank, size, 128);  // an ncclUniqueId's size
  checkBroadcast(*b, rank, size, std::size_t{1} << 20);

  // MPI already up (initialized by `b`): the same checks, MPI stays initialized.
  {
    const std::string e = mismatchError({rank, size + 1, "mpirun"});
    check(contains(e, ours + std::to_string(rank) + " of 4"), "size mismatch: " + e);
  }
  {
    // Only rank 1 is told a wrong rank: it names the mismatch, the others say another rank did.
    const int told = rank == 1 ? 2 : rank;
    const std::string e = mismatchError({told, size, "mpirun"});
    if (rank == 1) {
      check(contains(e, ours + "2 of 3"), "rank mismatch: " + e);
    } else {
      check(contains(e, "another rank's MPI_COMM_WORLD rank or size does not match mpirun's"),
            "rank mismatch seen from another rank: " + e);
    }
  }
  checkBroadcast(*b, rank, size, 128);  // still usable after the errors

  b.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  check(finalized == 1, "the bootstrap did not finalize the MPI it initialized");
  std::cout << "rank " << rank << ": ok" << std::endl;
  return 0;
}
