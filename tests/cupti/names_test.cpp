#include <gtest/gtest.h>

#include <cupti.h>

#include "tracer/cupti/cupti_names.h"

using namespace ddpscope::cupti;

TEST(CuptiNames, ApiNamesLoseTheirVersionSuffix) {
  EXPECT_EQ(stripVersionSuffix("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(stripVersionSuffix("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync_ptsz");
  EXPECT_EQ(stripVersionSuffix("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(stripVersionSuffix("cuda_v"), "cuda_v");
  EXPECT_EQ(apiName(ApiDomain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
            "cudaLaunchKernel");
  EXPECT_EQ(apiName(ApiDomain::Driver, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), "cuLaunchKernel");
  EXPECT_EQ(apiName(ApiDomain::Runtime, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020),
            "cudaStreamWaitEvent");
}

TEST(CuptiNames, TheFallbackTableAgreesWithCupti) {
  for (auto cbid : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                    CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020}) {
    EXPECT_EQ(apiNameFromTable(ApiDomain::Runtime, cbid), apiName(ApiDomain::Runtime, cbid));
  }
  EXPECT_EQ(apiNameFromTable(ApiDomain::Driver, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize),
            "cuCtxSynchronize");
  EXPECT_EQ(apiNameFromTable(ApiDomain::Runtime, 999999), "");
  EXPECT_EQ(apiName(ApiDomain::Runtime, 999999), "cudaRuntimeApi#999999");
}

TEST(CuptiNames, CopyAndSetNames) {
  EXPECT_EQ(memcpyName(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_PINNED),
            "Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(memcpyName(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE),
            "Memcpy PtoP (Device -> Device)");
  EXPECT_EQ(memcpyName(77, 99, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED),
            "Memcpy Unknown (Unknown -> Managed)");
  EXPECT_EQ(memsetName(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE), "Memset (Device)");
  EXPECT_EQ(syncName(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE), "Context Sync");
  EXPECT_EQ(syncName(0), "Sync");
}

TEST(CuptiNames, Demangling) {
  EXPECT_EQ(demangle("_Z10gemmKernelPfPKfS1_i"),
            "gemmKernel(float*, float const*, float const*, int)");
  EXPECT_EQ(demangle("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
                     "11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, "
            "1ul>)");
  EXPECT_EQ(demangle("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(demangle("_Zbroken"), "_Zbroken");
}
