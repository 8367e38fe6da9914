#include "termination.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>
#include <utility>

namespace ddpscope::cupti {

namespace {

constexpr int kSignals[] = {SIGTERM, SIGINT};
constexpr int kCount = sizeof kSignals / sizeof kSignals[0];

sem_t g_wake;
std::atomic<int> g_signal{0};
pid_t g_pid = 0;
struct sigaction g_previous[kCount];
bool g_hooked[kCount] = {};
std::function<void(int)>* g_callback = nullptr;

int indexOf(int signo) {
  for (int i = 0; i < kCount; ++i)
    if (kSignals[i] == signo) return i;
  return -1;
}

// Back to what the program had, then the signal again: its handler runs, or the default ends
// the process. Async-signal-safe (sigaction, raise).
void handOn(int signo) {
  const int i = indexOf(signo);
  if (i >= 0 && g_hooked[i]) sigaction(signo, &g_previous[i], nullptr);
  raise(signo);
}

void onSignal(int signo) {
  const int saved_errno = errno;
  int expected = 0;
  if (getpid() != g_pid || !g_signal.compare_exchange_strong(expected, signo)) {
    handOn(signo);  // a forked child, or a second signal while the trace is written: go now
  } else {
    sem_post(&g_wake);
  }
  errno = saved_errno;
}

void restoreInChild() {
  for (int i = 0; i < kCount; ++i)
    if (g_hooked[i]) sigaction(kSignals[i], &g_previous[i], nullptr);
}

}  // namespace

bool installTerminationHook(std::function<void(int)> on_signal) {
  if (g_callback != nullptr || sem_init(&g_wake, 0, 0) != 0) return false;
  g_callback = new std::function<void(int)>(std::move(on_signal));  // lives until exit
  g_pid = getpid();
  try {
    std::thread([] {
      while (sem_wait(&g_wake) != 0) {
        if (errno != EINTR) return;
      }
      const int signo = g_signal.load();
      try {
        (*g_callback)(signo);
      } catch (...) {  // the process ends either way
      }
      handOn(signo);
    }).detach();
  } catch (...) {
    return false;
  }
  for (int i = 0; i < kCount; ++i) {
    struct sigaction current {};
    if (sigaction(kSignals[i], nullptr, &current) != 0) continue;
    const bool custom = (current.sa_flags & SA_SIGINFO) != 0 || current.sa_handler != SIG_DFL;
    // SIGTERM: hooked unless ignored (its handler, if any, runs after ours). SIGINT: only at
    // its default, so that an interpreter's KeyboardInterrupt keeps working as it did.
    if (current.sa_handler == SIG_IGN && (current.sa_flags & SA_SIGINFO) == 0) continue;
    if (kSignals[i] == SIGINT && custom) continue;
    struct sigaction ours {};
    ours.sa_handler = onSignal;
    sigemptyset(&ours.sa_mask);
    ours.sa_flags = SA_RESTART;
    g_previous[i] = current;
    g_hooked[i] = true;  // before the handler can run: it reads this
    if (sigaction(kSignals[i], &ours, nullptr) != 0) g_hooked[i] = false;
  }
  pthread_atfork(nullptr, nullptr, restoreInChild);
  return true;
}

}  // namespace ddpscope::cupti
