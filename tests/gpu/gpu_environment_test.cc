#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_environment.h"

namespace lockstep {
namespace {

TEST(GpuEnvironmentTest, DeviceIsHopperOrNewer) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const cuda::DeviceInfo& d = testing::Inventory().devices.front();
  EXPECT_GE(d.compute_capability, 90) << d.name << " is older than the sm_90 lockstep builds for";
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GT(d.memory_bytes, 0);
}

}  // namespace
}  // namespace lockstep
