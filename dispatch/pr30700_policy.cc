#include "dispatch/pr30700_policy.h"

#include <algorithm>

#include "dispatch/fusion_gate.h"

namespace lockstep {

GroupRole Pr30700Policy::MoeWorkspaceRole(const ParallelWidths& widths) const {
  return widths.moe_ep > 1 ? GroupRole::kMoeEp : GroupRole::kMoeTp;
}

bool Pr30700Policy::ObjectHasCustomAllReduce(const GroupObject& object) const {
  for (GroupRole r : object.roles) {
    if (r == GroupRole::kTp || r == GroupRole::kAttnTp || r == GroupRole::kMoeTp) return true;
  }
  return false;
}

CustomAgreedState Pr30700Policy::CustomLimits(const ServingArgs& args, const Platform&,
                                              int64_t configured_max_bytes) const {
  CustomAgreedState s;
  s.available = !args.disable_custom_all_reduce;
  s.generation = 1;
  s.max_inclusive = false;
  s.world_sizes = (1u << 2) | (1u << 4) | (1u << 6) | (1u << 8);
  s.max_bytes = configured_max_bytes > 0 ? configured_max_bytes : int64_t{8} << 20;
  return s;
}

ExitPlan Pr30700Policy::PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const {
  ExitPlan plan;
  if (in.ffn == FfnKind::kDense) {
    // Dense MLPs complete over attention TP at once.
    if (w.attn_tp > 1) {
      plan.kind = ExitKind::kCompleteNow;
      plan.reductions = {GroupRole::kAttnTp};
    }
    return plan;
  }
  FusionGateInputs gate;
  gate.fused_backend_enabled = in.fused_backend;
  gate.model_supports_ar_norm_fusion = in.norm_fusable;
  gate.tokens = in.tokens;
  gate.max_fused_tokens = in.norm_max_tokens;
  gate.eagle_with_dp_attention = in.eagle && w.DpAttention();
  const bool fuse = !in.last_in_stage && ShouldFuseMlpAllReduceWithNextLayer(w, gate);
  const PostExpertsPlan post = PlanPostExpertsReduction(w, fuse);
  plan.merged = post.merged;
  if (post.fused_into_next_layer) {
    plan.kind = ExitKind::kDefer;
    plan.group = post.fused_group;
    return plan;
  }
  plan.reductions = post.reductions;
  plan.kind = plan.reductions.empty() ? ExitKind::kNothing : ExitKind::kCompleteNow;
  return plan;
}

std::vector<GroupRole> Pr30700Policy::PipelineFlushReductions(const ParallelWidths& widths,
                                                              const ExitPlan&) const {
  return PlanPostExpertsReduction(widths, false).reductions;
}

DpBatchPlan Pr30700Policy::PlanDpBatch(const DpBatch& gathered, int, int,
                                       const RankLocalState&) const {
  DpBatchPlan plan;
  plan.gather = false;
  plan.padding = DpPadding::kMaxLen;
  int64_t largest = 0;
  for (int64_t t : gathered.tokens) largest = std::max(largest, t);
  plan.global_rows = largest * static_cast<int64_t>(gathered.tokens.size());
  return plan;
}

void Pr30700Policy::ConfigureFusedLaunch(const GroupBackends& backends, const CallDesc& call,
                                         DecisionRecord& record) const {
  DispatchPolicy::ConfigureFusedLaunch(backends, call, record);
  record.fp32_acc = false;  // aligned with the fused AR + norm path (PR #30700)
}

}  // namespace lockstep
