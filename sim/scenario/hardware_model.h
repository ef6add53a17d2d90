// Where each rank's GPU sits and what a byte costs between two of them.

#ifndef LOCKSTEP_SIM_SCENARIO_HARDWARE_MODEL_H_
#define LOCKSTEP_SIM_SCENARIO_HARDWARE_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "sim/scenario/scenario.h"

namespace lockstep {

enum class HopClass : uint8_t { kSelf, kIntraNode, kIntraDomain, kNetwork };
inline constexpr size_t kHopClasses = 4;
std::string_view HopClassName(HopClass hop);

// Rank r runs on GPU r: node r / gpus_per_node, NVLink domain
// node / nodes_per_domain.
class HardwareModel {
 public:
  explicit HardwareModel(const HardwareSpec& spec) : spec_(spec) {}

  const HardwareSpec& spec() const { return spec_; }
  int Node(int rank) const { return rank / spec_.gpus_per_node; }
  int Domain(int rank) const { return Node(rank) / spec_.nodes_per_domain; }
  HopClass Hop(int a, int b) const {
    if (a == b) return HopClass::kSelf;
    if (Node(a) == Node(b)) return HopClass::kIntraNode;
    if (Domain(a) == Domain(b)) return HopClass::kIntraDomain;
    return HopClass::kNetwork;
  }
  const HopSpec& Spec(HopClass hop) const;

  // Nanoseconds for `bytes` to land from a to b (latency + bytes / bandwidth).
  int64_t TransferNs(int a, int b, int64_t bytes) const;
  // The slowest hop class among the members of a group.
  HopClass WorstHop(std::span<const int> ranks) const;
  bool SameNode(std::span<const int> ranks) const;
  // Every pair of the group linked by NVLink: one node with NVLink, or one
  // MNNVL domain.
  bool FullNvlink(std::span<const int> ranks) const;
  // The fused MNNVL / NVLink kernels can map every member's memory: the group
  // lies in one NVLink domain of an NVLink machine, or is a pair of PCIe
  // peers on one node; and the kernels serve that many ranks
  // (dispatch/kernel_shape.h).
  bool FusedKernelReachable(std::span<const int> ranks) const;
  // Ring all-reduce time for `bytes` per rank over `ranks` (NCCL's model:
  // 2 (n - 1) latency + 2 (n - 1) / n bytes / bandwidth of the worst hop).
  int64_t RingAllReduceNs(std::span<const int> ranks, int64_t bytes) const {
    return RingAllReduceNs(ranks.size(), WorstHop(ranks), bytes);
  }
  int64_t RingAllReduceNs(size_t ranks, HopClass worst, int64_t bytes) const;
  // Compute time of one layer's matmuls for `tokens` tokens on one rank of a
  // `tp`-way group.
  int64_t LayerComputeNs(const ModelSpec& model, int64_t tokens, int tp) const;

 private:
  HardwareSpec spec_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_HARDWARE_MODEL_H_
