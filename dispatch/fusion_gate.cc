#include "dispatch/fusion_gate.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lockstep {

std::string_view FusionGateRefusal(const ParallelWidths& widths, const FusionGateInputs& in) {
  if (!in.fused_backend_enabled) return "no fused AR+norm backend configured";
  if (!in.model_supports_ar_norm_fusion) return "the model cannot fuse AR with the next norm";
  if (in.moe_cp_allgather) return "MoE CP all-gather skips postprocess_layer";
  // PR #30700: the hybrid gate.
  if (widths.IsHybridEpTp()) return "hybrid EP+TP (moe_ep > 1 and moe_tp > 1)";
  if (in.eagle_with_dp_attention) return "EAGLE with DP attention";
  if (in.input_scattered) return "attention-TP input is scattered";
  if (in.mlp_scattered) return "MLP scatter mode is SCATTERED";
  if (in.tokens <= 0 || in.tokens > in.max_fused_tokens) {
    return "batch outside the fused AR+norm token range";
  }
  return {};
}

bool ShouldFuseMlpAllReduceWithNextLayer(const ParallelWidths& widths, const FusionGateInputs& in) {
  return FusionGateRefusal(widths, in).empty();
}

PostExpertsPlan PlanPostExpertsReduction(const ParallelWidths& w, bool fuse_with_next_layer) {
  PostExpertsPlan plan;
  plan.merged = w.IsHybridEpTp() && w.moe_dp == 1;
  if (fuse_with_next_layer) {
    plan.fused_into_next_layer = true;
    plan.fused_group = plan.merged    ? GroupRole::kTp
                       : w.moe_ep > 1 ? GroupRole::kMoeEp
                                      : GroupRole::kMoeTp;
    return plan;
  }
  if (plan.merged) {
    plan.reductions.push_back(GroupRole::kTp);
    return plan;
  }
  if (w.moe_ep > 1) plan.reductions.push_back(GroupRole::kMoeEp);
  if (w.moe_tp > 1) plan.reductions.push_back(GroupRole::kMoeTp);
  return plan;
}

std::string PostExpertsPlan::ToString() const {
  if (fused_into_next_layer) {
    return absl::StrFormat("fused into the next layer's AR+norm over %s",
                           GroupRoleName(fused_group));
  }
  if (reductions.empty()) return "no reduction (single-rank MoE groups)";
  std::vector<std::string> names;
  for (GroupRole r : reductions) names.emplace_back(GroupRoleName(r));
  return absl::StrCat("all-reduce over ", absl::StrJoin(names, " then "),
                      merged ? " (EP and MoE-TP merged)" : "");
}

}  // namespace lockstep
