// GPU tests skip, visibly and with the reason, where the GPUs they need are
// absent; they never fail for lack of hardware.

#ifndef LOCKSTEP_TESTS_GPU_GPU_TEST_ENVIRONMENT_H_
#define LOCKSTEP_TESTS_GPU_GPU_TEST_ENVIRONMENT_H_

#include "gtest/gtest.h"
#include "kernels/cuda/device_inventory.h"

namespace lockstep::testing {

inline const cuda::DeviceInventory& Inventory() {
  static const cuda::DeviceInventory inventory = cuda::ProbeDevices();
  return inventory;
}

}  // namespace lockstep::testing

// Skips the current test unless at least `n` CUDA devices are usable.
#define LOCKSTEP_REQUIRE_GPUS(n)                                                                \
  do {                                                                                          \
    const auto& inv_ = ::lockstep::testing::Inventory();                                        \
    if (static_cast<int>(inv_.devices.size()) < (n)) {                                          \
      GTEST_SKIP() << "needs " << (n) << " GPU(s), found " << inv_.devices.size()               \
                   << (inv_.unavailable_reason.empty() ? "" : ": ") << inv_.unavailable_reason; \
    }                                                                                           \
  } while (0)

#endif  // LOCKSTEP_TESTS_GPU_GPU_TEST_ENVIRONMENT_H_
