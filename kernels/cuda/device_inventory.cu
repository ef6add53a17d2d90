#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/device_inventory.h"

namespace lockstep::cuda {

DeviceInventory ProbeDevices() {
  DeviceInventory inventory;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    inventory.unavailable_reason = std::string("CUDA reports no usable device: ") +
                                   cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
    return inventory;
  }
  if (count == 0) {
    inventory.unavailable_reason = "the CUDA driver sees no GPU on this host";
    return inventory;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) continue;
    inventory.devices.push_back(DeviceInfo{d, prop.name, prop.major * 10 + prop.minor,
                                           prop.multiProcessorCount,
                                           static_cast<long long>(prop.totalGlobalMem)});
  }
  if (inventory.devices.empty()) inventory.unavailable_reason = "no device answered a query";
  return inventory;
}

bool CanAccessPeer(int a, int b) {
  int can = 0;
  return cudaDeviceCanAccessPeer(&can, a, b) == cudaSuccess && can != 0;
}

}  // namespace lockstep::cuda
