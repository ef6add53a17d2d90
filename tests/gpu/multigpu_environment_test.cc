#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_environment.h"

namespace lockstep {
namespace {

TEST(MultiGpuEnvironmentTest, EveryPairOfGpusCanMapPeerMemory) {
  LOCKSTEP_REQUIRE_GPUS(2);
  const auto& devices = testing::Inventory().devices;
  for (const auto& a : devices) {
    for (const auto& b : devices) {
      if (a.ordinal == b.ordinal) continue;
      EXPECT_TRUE(cuda::CanAccessPeer(a.ordinal, b.ordinal))
          << "GPU " << a.ordinal << " cannot map GPU " << b.ordinal << "'s memory";
    }
  }
}

}  // namespace
}  // namespace lockstep
