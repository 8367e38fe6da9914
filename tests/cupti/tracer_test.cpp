// The live tracer on a machine that may have no GPU: start() either works (a GPU machine) or
// throws a CuptiError that names the failing call; it never exits and can be retried.

#include <gtest/gtest.h>

#include <string>

#include "tracer/cupti/cupti_error.h"
#include "tracer/cupti/cupti_tracer.h"

using namespace ddpscope::cupti;

TEST(CuptiTracer, StartWorksOrNamesTheFailingCall) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    CuptiTracer tracer;
    try {
      tracer.start();
    } catch (const CuptiError& e) {
      EXPECT_NE(std::string(e.what()).find("cupti"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("CUPTI_ERROR_"), std::string::npos) << e.what();
      EXPECT_FALSE(tracer.running());
      continue;  // no driver here: the next attempt must fail the same way, not as "running"
    }
    EXPECT_TRUE(tracer.running());
    tracer.stop();
    EXPECT_FALSE(tracer.running());
    FinishOptions finish;
    finish.rank = 2;
    finish.world_size = 4;
    const auto trace = tracer.takeTrace(finish);
    EXPECT_EQ(trace.rank, 2);
    EXPECT_EQ(trace.source(), "cuda");
    EXPECT_FALSE(trace.ddpscope.incomplete);
  }
}

TEST(CuptiTracer, OnlyOneRunsAtATime) {
  CuptiTracer first;
  try {
    first.start();
  } catch (const CuptiError&) {
    GTEST_SKIP() << "CUPTI cannot trace here (no GPU driver)";
  }
  CuptiTracer second;
  EXPECT_THROW(second.start(), std::logic_error);
  first.stop();
}

TEST(CuptiError, NamesTheCallAndCuptisDescription) {
  const CuptiError e(CUPTI_ERROR_NOT_INITIALIZED, "cuptiActivityEnable(kind)", "f.cpp", 12);
  EXPECT_EQ(std::string(e.what()),
            "cuptiActivityEnable(kind) failed: CUPTI_ERROR_NOT_INITIALIZED (f.cpp:12)");
  EXPECT_EQ(e.result(), CUPTI_ERROR_NOT_INITIALIZED);
}
