// Where each rank's GPU is: its host and, on multi-node NVLink (MNNVL)
// systems, its NVLink fabric cluster and clique (NVML). The fused kernel
// reaches a group's GPUs when they share a host or one completed clique.

#ifndef LOCKSTEP_HW_FABRIC_H_
#define LOCKSTEP_HW_FABRIC_H_

#include <cstdint>
#include <span>
#include <vector>

namespace lockstep::hw {

// Plain bytes: all-gathered between ranks as is.
struct FabricInfo {
  char host[64] = {};
  unsigned char cluster[16] = {};
  uint32_t clique = 0;
  int32_t state = -1;  // -1: no fabric information (NVML or the call missing)
};

// This process's GPU `device`: its host name and NVML fabric information
// (loaded at run time; no link-time dependency on the driver's NVML).
FabricInfo ProbeFabric(int device);

// Whether the GPUs of `ranks` (indices into `all`) reach each other over
// NVLink (one host, or one completed MNNVL clique of one cluster), and the
// kernels serve that many ranks (dispatch/kernel_shape.h).
bool FusedKernelReachable(const std::vector<FabricInfo>& all, std::span<const int> ranks);

// Whether every rank of `ranks` is on one host.
bool SameHost(const std::vector<FabricInfo>& all, std::span<const int> ranks);

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_FABRIC_H_
