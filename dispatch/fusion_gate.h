// PR #30700's fusion gate (the design lockstep was first built from, now the
// "sglang-pr30700" policy): whether the post-experts all-reduce may be
// deferred into the next layer's fused all-reduce + residual + RMSNorm, and
// over which groups it reduces. SGLang 0.5.23 decides this differently
// (dispatch/layer_boundary.h).

#ifndef LOCKSTEP_DISPATCH_FUSION_GATE_H_
#define LOCKSTEP_DISPATCH_FUSION_GATE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/group_layout.h"
#include "dispatch/parallel_config.h"

namespace lockstep {

// Per-step inputs of SGLang's should_fuse_mlp_allreduce_with_next_layer()
// besides the layout. All of them must be the same on every rank of the TP
// group (they are: server arguments, the model, and the batch's token count).
struct FusionGateInputs {
  // A fused AR + norm backend is configured (--flashinfer-allreduce-fusion-backend).
  bool fused_backend_enabled = true;
  // The model can fuse AR with the next norm (DeepSeek-V4's mHC layers cannot).
  bool model_supports_ar_norm_fusion = true;
  int64_t tokens = 0;
  // Largest batch the fused AR + norm serves (its workspace's max tokens).
  int64_t max_fused_tokens = 0;
  // The remaining guards of SGLang, unchanged by PR #30700.
  bool moe_cp_allgather = false;
  bool eagle_with_dp_attention = false;
  bool input_scattered = false;
  bool mlp_scattered = false;
};

// SGLang's should_fuse_mlp_allreduce_with_next_layer() with PR #30700's gate:
// never under hybrid EP+TP (moe_ep > 1 and moe_tp > 1), where the
// post-experts reduction spans two disjoint groups and the next layer's fused
// kernel reduces over one of them only (half the peers: SGLang #32963,
// #32012). Pure TP and pure EP layouts fuse when the other guards allow.
bool ShouldFuseMlpAllReduceWithNextLayer(const ParallelWidths& widths,
                                         const FusionGateInputs& inputs);

// Why the gate above refuses ("hybrid EP+TP (moe_ep > 1 and moe_tp > 1)"),
// or an empty view when it fuses.
std::string_view FusionGateRefusal(const ParallelWidths& widths, const FusionGateInputs& inputs);

// The post-experts reduction of one MoE layer (no all-to-all backend).
struct PostExpertsPlan {
  // Deferred into the next layer's fused AR + norm, which reduces over
  // `fused_group` alone; `reductions` is then empty.
  bool fused_into_next_layer = false;
  GroupRole fused_group = GroupRole::kTp;
  // The all-reduces run after the experts, in order.
  std::vector<GroupRole> reductions;
  // True when EP and MoE-TP are merged into one TP all-reduce.
  bool merged = false;

  std::string ToString() const;
};

// Reference plan: with moe_ep > 1, moe_tp > 1 and moe_dp == 1 the two
// reductions merge into one TP all-reduce; otherwise MOE_EP (if moe_ep > 1)
// then MOE_TP (if moe_tp > 1). When `fuse_with_next_layer` (which the gate
// above allows only outside hybrid EP+TP) the single group is TP if merged,
// else MOE_EP if moe_ep > 1, else MOE_TP.
PostExpertsPlan PlanPostExpertsReduction(const ParallelWidths& widths, bool fuse_with_next_layer);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_FUSION_GATE_H_
