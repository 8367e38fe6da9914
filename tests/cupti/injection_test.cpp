// libddpscope_cupti.so loads without a GPU or libcuda and exports the injection entry point.

#include <dlfcn.h>
#include <gtest/gtest.h>

TEST(CuptiInjection, ExportsInitializeInjection) {
  void* lib = dlopen(DDPSCOPE_CUPTI_SO, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  EXPECT_NE(dlsym(lib, "InitializeInjection"), nullptr);
  // Everything else is hidden, so nothing clashes with the traced program's symbols.
  EXPECT_EQ(dlsym(lib, "_ZN8ddpscope5cupti11CuptiTracer5startEv"), nullptr);
  dlclose(lib);
}
