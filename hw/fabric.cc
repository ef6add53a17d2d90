#include "hw/fabric.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstring>

#include "dispatch/kernel_shape.h"

namespace lockstep::hw {
namespace {

constexpr unsigned char kFabricCompleted = 3;  // NVML_GPU_FABRIC_STATE_COMPLETED

}  // namespace

FabricInfo ProbeFabric(int device) {
  FabricInfo info;
  gethostname(info.host, sizeof(info.host) - 1);
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return info;
  using InitFn = int (*)();
  using ByBusFn = int (*)(const char*, void**);
  struct NvmlFabric {  // nvmlGpuFabricInfo_t
    unsigned char cluster[16];
    int status;
    unsigned int clique;
    unsigned char state;
  };
  using FabricFn = int (*)(void*, NvmlFabric*);
  auto init = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<ByBusFn>(dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto fabric = reinterpret_cast<FabricFn>(dlsym(nvml, "nvmlDeviceGetGpuFabricInfo"));
  char bus[32] = {};
  void* handle = nullptr;
  NvmlFabric f{};
  if (init != nullptr && by_bus != nullptr && fabric != nullptr && init() == 0 &&
      cudaDeviceGetPCIBusId(bus, sizeof(bus), device) == cudaSuccess && by_bus(bus, &handle) == 0 &&
      fabric(handle, &f) == 0 && f.status == 0) {
    std::memcpy(info.cluster, f.cluster, sizeof(info.cluster));
    info.clique = f.clique;
    info.state = f.state;
  }
  return info;
}

bool SameHost(const std::vector<FabricInfo>& all, std::span<const int> ranks) {
  const FabricInfo& a = all[static_cast<size_t>(ranks.front())];
  for (int r : ranks) {
    if (std::strcmp(a.host, all[static_cast<size_t>(r)].host) != 0) return false;
  }
  return true;
}

bool FusedKernelReachable(const std::vector<FabricInfo>& all, std::span<const int> ranks) {
  if (!KernelServesWorld(static_cast<int64_t>(ranks.size()))) return false;
  const FabricInfo& a = all[static_cast<size_t>(ranks.front())];
  for (int r : ranks) {
    const FabricInfo& b = all[static_cast<size_t>(r)];
    if (std::strcmp(a.host, b.host) == 0) continue;
    // Other hosts: only inside one completed MNNVL clique.
    if (a.state != kFabricCompleted || b.state != kFabricCompleted || a.clique != b.clique ||
        std::memcmp(a.cluster, b.cluster, sizeof(a.cluster)) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace lockstep::hw
