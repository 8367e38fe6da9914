// libddpscope_cupti.so loads without a GPU or libcuda, exports the injection entry point, and
// its entry point never stops the program it is injected into.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(CuptiInjection, ExportsInitializeInjection) {
  void* lib = dlopen(DDPSCOPE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_NE(dlsym(lib, "InitializeInjection"), nullptr);
  // Everything else is hidden, so nothing clashes with the traced program's symbols.
  EXPECT_EQ(dlsym(lib, "_ZN8ddpscope5cupti11CuptiTracer5startEv"), nullptr);
  dlclose(lib);
}

TEST(CuptiInjection, InitializeInjectionReturnsEvenWithoutADriver) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A child process: CUPTI's global state must not leak into the other tests.
    setenv("DDPSCOPE_TRACE_DIR", "/nonexistent-ddpscope-test", 1);
    void* lib = dlopen(DDPSCOPE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) _exit(10);
    auto* init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
    if (init == nullptr) _exit(11);
    const int first = init();
    const int again = init();  // the driver may call it more than once: same answer
    _exit(first == again && (first == 0 || first == 1) ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the injected program was killed";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}
