#include "sim/scenario/hardware_model.h"

#include <algorithm>
#include <cmath>

#include "dispatch/kernel_shape.h"

namespace lockstep {

std::string_view HopClassName(HopClass hop) {
  switch (hop) {
    case HopClass::kSelf:
      return "self";
    case HopClass::kIntraNode:
      return "intra_node";
    case HopClass::kIntraDomain:
      return "intra_domain";
    case HopClass::kNetwork:
      return "network";
  }
  return "?";
}

const HopSpec& HardwareModel::Spec(HopClass hop) const {
  switch (hop) {
    case HopClass::kSelf:
    case HopClass::kIntraNode:
      return spec_.intra_node;
    case HopClass::kIntraDomain:
      return spec_.intra_domain;
    case HopClass::kNetwork:
      break;
  }
  return spec_.network;
}

int64_t HardwareModel::TransferNs(int a, int b, int64_t bytes) const {
  const HopClass hop = Hop(a, b);
  if (hop == HopClass::kSelf) return 0;
  const HopSpec& s = Spec(hop);
  return static_cast<int64_t>(s.latency_us * 1e3 + static_cast<double>(bytes) / s.bandwidth_gbps +
                              0.5);
}

HopClass HardwareModel::WorstHop(std::span<const int> ranks) const {
  HopClass worst = HopClass::kSelf;
  if (ranks.empty()) return worst;
  const int first_node = Node(ranks.front());
  const int first_domain = Domain(ranks.front());
  for (int r : ranks) {
    if (Domain(r) != first_domain) return HopClass::kNetwork;
    if (Node(r) != first_node)
      worst = HopClass::kIntraDomain;
    else if (worst == HopClass::kSelf && r != ranks.front())
      worst = HopClass::kIntraNode;
  }
  return worst;
}

bool HardwareModel::SameNode(std::span<const int> ranks) const {
  return std::all_of(ranks.begin(), ranks.end(),
                     [&](int r) { return Node(r) == Node(ranks.front()); });
}

bool HardwareModel::FullNvlink(std::span<const int> ranks) const {
  if (!spec_.nvlink) return false;
  return WorstHop(ranks) != HopClass::kNetwork;
}

bool HardwareModel::FusedKernelReachable(std::span<const int> ranks) const {
  if (!KernelServesWorld(static_cast<int64_t>(ranks.size()))) return false;
  if (spec_.nvlink) return WorstHop(ranks) != HopClass::kNetwork;
  return ranks.size() <= 2 && SameNode(ranks);
}

int64_t HardwareModel::RingAllReduceNs(size_t ranks, HopClass worst, int64_t bytes) const {
  const auto n = static_cast<double>(ranks);
  if (ranks <= 1) return 0;
  const HopSpec& s = Spec(worst);
  const double ns = 2.0 * (n - 1.0) * s.latency_us * 1e3 +
                    2.0 * (n - 1.0) / n * static_cast<double>(bytes) / s.bandwidth_gbps;
  return static_cast<int64_t>(ns + 0.5);
}

int64_t HardwareModel::LayerComputeNs(const ModelSpec& model, int64_t tokens, int tp) const {
  const double gflops_per_token =
      model.layer_gflops_per_token > 0
          ? model.layer_gflops_per_token
          : 24.0 * static_cast<double>(model.hidden) * static_cast<double>(model.hidden) / 1e9;
  // Half the peak: a fair figure for decode-sized matmuls.
  const double seconds = gflops_per_token * static_cast<double>(tokens) /
                         static_cast<double>(std::max(tp, 1)) / (spec_.tflops * 1e3 * 0.5);
  return 2000 + static_cast<int64_t>(seconds * 1e9 + 0.5);
}

}  // namespace lockstep
