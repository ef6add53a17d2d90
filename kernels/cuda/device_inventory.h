// What CUDA devices this process can use, and why not when it can use none.
// GPU tests skip with this reason instead of failing on hosts without a GPU.

#ifndef LOCKSTEP_KERNELS_CUDA_DEVICE_INVENTORY_H_
#define LOCKSTEP_KERNELS_CUDA_DEVICE_INVENTORY_H_

#include <string>
#include <vector>

namespace lockstep::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int compute_capability = 0;  // major * 10 + minor
  int sm_count = 0;
  long long memory_bytes = 0;
};

struct DeviceInventory {
  std::vector<DeviceInfo> devices;
  // Why `devices` is empty ("no CUDA driver: ..."); empty when devices exist.
  std::string unavailable_reason;
};

// Queries the CUDA runtime once. Never throws, never aborts.
DeviceInventory ProbeDevices();

// Whether devices `a` and `b` can map each other's memory (NVLink or PCIe P2P).
bool CanAccessPeer(int a, int b);

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_DEVICE_INVENTORY_H_
