#pragma once
// A launcher stops a job's processes with SIGTERM (torchrun, when another rank failed; Slurm, at
// the end of a time limit): the injected tracer then writes what it has, marked incomplete,
// instead of losing it with the process. The signal handler only wakes a thread of this hook's
// own (sem_post is async-signal-safe); that thread runs the callback and then ends the process
// the way the signal would have: the program's own handler, if it had one, runs after.
//
// Plain POSIX C++: tests drive it in forked children without a GPU.

#include <functional>

namespace ddpscope::cupti {

// Installs the hook for SIGTERM, and for SIGINT where the program left SIGINT at its default
// (Python's own SIGINT handler, KeyboardInterrupt, is left alone). A signal the program ignores
// stays ignored. The callback runs at most once, on the hook's thread, with the signal number; a
// second signal during it ends the process at once. Forked children (data-loader workers) get
// the program's own dispositions back. Returns false when the hook could not be installed (it
// then changes nothing). Call once per process.
bool installTerminationHook(std::function<void(int)> on_signal);

}  // namespace ddpscope::cupti
