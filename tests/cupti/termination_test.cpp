// The SIGTERM hook of the injected tracer, in forked children (signal dispositions are
// process-wide): the callback runs once, then the process ends as the signal would have ended
// it; the program's own handler still runs; ignored signals stay ignored; Python-style SIGINT
// handlers are left alone; forked children and impatient second signals are never held up.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "tracer/cupti/termination.h"

using ddpscope::cupti::installTerminationHook;

namespace {

std::string marker() {
  return testing::TempDir() + "/ddpscope-termination-" + std::to_string(getpid());
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// Runs `body` in a child; returns its wait status.
template <typename Body>
int inChild(Body body) {
  const pid_t child = fork();
  if (child == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

void writeSignal(const std::string& path, int signo) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return;
  std::fprintf(f, "%d", signo);
  std::fclose(f);
}

// Waits in the child for the signal to end it; exits 99 if it does not within 10 s.
void waitToBeEnded() {
  for (int i = 0; i < 1000; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  _exit(99);
}

// A child that sets its own dispositions (setup), installs the hook (which writes the signal
// number to `path`) and sends itself `signo`; returns its wait status.
int hookedChildSignalled(const std::string& path, void (*setup)(), int signo) {
  std::remove(path.c_str());
  return inChild([&] {
    setup();
    if (!installTerminationHook([&](int s) { writeSignal(path, s); })) _exit(10);
    kill(getpid(), signo);
    waitToBeEnded();
  });
}

void onTermExit42(int) {
  _exit(42);
}
volatile sig_atomic_t g_interrupted = 0;
void onInt(int) {
  g_interrupted = 1;
}

}  // namespace

TEST(TerminationHook, WritesThenEndsTheProcessAsTheSignalWould) {
  const auto path = marker() + "-a";
  const int status = hookedChildSignalled(
      path, [] {}, SIGTERM);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(readFile(path), std::to_string(SIGTERM));
  std::remove(path.c_str());
}

TEST(TerminationHook, TheProgramsOwnHandlerRunsAfter) {
  const auto path = marker() + "-b";
  const int status = hookedChildSignalled(
      path, [] { signal(SIGTERM, onTermExit42); }, SIGTERM);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 42);
  EXPECT_EQ(readFile(path), std::to_string(SIGTERM));
  std::remove(path.c_str());
}

TEST(TerminationHook, IgnoredSignalsAndCustomSigintAreLeftAlone) {
  const auto path = marker() + "-c";
  std::remove(path.c_str());
  const int status = inChild([&] {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, onInt);  // an interpreter's KeyboardInterrupt
    if (!installTerminationHook([&](int signo) { writeSignal(path, signo); })) _exit(10);
    kill(getpid(), SIGTERM);
    kill(getpid(), SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    _exit(g_interrupted ? 0 : 11);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(readFile(path), "");  // the callback never ran
}

TEST(TerminationHook, DefaultSigintIsHooked) {
  const auto path = marker() + "-d";
  const int status = hookedChildSignalled(
      path, [] { signal(SIGINT, SIG_DFL); }, SIGINT);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGINT);
  EXPECT_EQ(readFile(path), std::to_string(SIGINT));
  std::remove(path.c_str());
}

TEST(TerminationHook, ForkedChildrenAndSecondSignalsAreNotHeldUp) {
  const auto path = marker() + "-e";
  std::remove(path.c_str());
  const int status = inChild([&] {
    if (!installTerminationHook([&](int signo) {
          writeSignal(path, signo);
          std::this_thread::sleep_for(std::chrono::seconds(20));  // a slow write
        })) {
      _exit(10);
    }
    // A data-loader worker: SIGTERM ends it at once, and it runs no callback.
    const pid_t worker = fork();
    if (worker == 0) {
      kill(getpid(), SIGTERM);
      waitToBeEnded();
    }
    int worker_status = 0;
    waitpid(worker, &worker_status, 0);
    if (!WIFSIGNALED(worker_status) || WTERMSIG(worker_status) != SIGTERM) _exit(12);
    if (!readFile(path).empty()) _exit(13);
    // The launcher's first SIGTERM starts the (slow) write; its second ends the process now.
    kill(getpid(), SIGTERM);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    kill(getpid(), SIGTERM);
    waitToBeEnded();
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(readFile(path), std::to_string(SIGTERM));
  std::remove(path.c_str());
}
