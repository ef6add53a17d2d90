// Where the simulated fused kernels reach: one NVLink domain, and no more
// ranks than lockstep's kernels serve (dispatch/kernel_shape.h), so the
// simulator's workspace vote fails where the GPU's set-up fails.

#include "sim/scenario/hardware_model.h"

#include <numeric>
#include <vector>

#include "dispatch/kernel_shape.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

std::vector<int> Ranks(int n) {
  std::vector<int> r(static_cast<size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

TEST(HardwareModelTest, TheFusedKernelsReachOneDomainOfAtMostTheirPeerCount) {
  HardwareSpec spec;
  spec.gpus_per_node = 4;
  spec.nodes_per_domain = 32;  // one 128-GPU NVLink domain
  spec.max_gpus = 256;
  spec.nvlink = true;
  const HardwareModel hw(spec);
  EXPECT_TRUE(hw.FusedKernelReachable(Ranks(32)));
  EXPECT_TRUE(hw.FusedKernelReachable(Ranks(kKernelMaxPeers)));
  // Linked, but wider than the kernels' peer table.
  EXPECT_FALSE(hw.FusedKernelReachable(Ranks(kKernelMaxPeers + 1)));
  EXPECT_FALSE(hw.FusedKernelReachable(Ranks(128)));
  // Across two domains: the network, whatever the size.
  const std::vector<int> split = {0, 1, 128, 129};
  EXPECT_FALSE(hw.FusedKernelReachable(split));
}

TEST(HardwareModelTest, PciePairsOnOneNodeOnly) {
  HardwareSpec spec;
  spec.nvlink = false;
  spec.gpus_per_node = 8;
  spec.max_gpus = 16;
  const HardwareModel hw(spec);
  EXPECT_TRUE(hw.FusedKernelReachable(Ranks(2)));
  EXPECT_FALSE(hw.FusedKernelReachable(Ranks(4)));
  const std::vector<int> across = {7, 8};
  EXPECT_FALSE(hw.FusedKernelReachable(across));
}

}  // namespace
}  // namespace lockstep
