// PR #30700's original design as a policy ("sglang-pr30700"): the dispatch
// lockstep was first built from (the source document's SGLang), kept so that
// the difference between it and SGLang 0.5.23 is itself a scenario
// (`lockstep sim --policy sglang-pr30700`, `lockstep layout --policy ...`).
// What it decides otherwise (docs/FIDELITY.md):
//   - the post-experts sum is fused into the next layer's AR + norm by
//     should_fuse_mlp_allreduce_with_next_layer with the hybrid EP+TP gate
//     (dispatch/fusion_gate.h), over MOE_EP or MOE_TP when not merged;
//   - the MoE workspace rendezvouses on MOE_EP (ep > 1) else MOE_TP;
//   - the fused AR + norm goes through the group's tag and the kAllReduce
//     predicates, capacity per dimension, fp32_acc off;
//   - a workspace failure turns off that workspace only;
//   - a vLLM-style custom all-reduce (world 2, 4, 6, 8; bytes < its bound) on
//     the TP, ATTN_TP and MOE_TP objects;
//   - attention DP pads the MoE input to attn_dp * the largest batch, with no
//     gather; the embedding (3-D) and dense MLPs reduce over ATTN_TP.

#ifndef LOCKSTEP_DISPATCH_PR30700_POLICY_H_
#define LOCKSTEP_DISPATCH_PR30700_POLICY_H_

#include <string_view>
#include <vector>

#include "dispatch/policy.h"

namespace lockstep {

inline constexpr std::string_view kPr30700PolicyName = "sglang-pr30700";

class Pr30700Policy : public DispatchPolicy {
 public:
  std::string_view name() const override { return kPr30700PolicyName; }

  GroupRole MoeWorkspaceRole(const ParallelWidths& widths) const override;
  bool ObjectHasCustomAllReduce(const GroupObject& object) const override;
  CustomAgreedState CustomLimits(const ServingArgs& args, const Platform& platform,
                                 int64_t configured_max_bytes) const override;
  FusedCapacityRule CapacityRule(FusionBackend) const override {
    return FusedCapacityRule::kPerDimension;
  }
  bool NormOnNamedWorkspace() const override { return false; }
  bool WorkspaceFailureDisablesFusion() const override { return false; }

  ExitPlan PlanFfnExit(const ParallelWidths& widths, const ExitInputs& inputs) const override;
  std::vector<GroupRole> PipelineFlushReductions(const ParallelWidths& widths,
                                                 const ExitPlan& exit) const override;
  DpBatchPlan PlanDpBatch(const DpBatch& gathered, int attn_tp, int my_group,
                          const RankLocalState& local) const override;
  GroupRole EmbeddingGroup(const ParallelWidths&, bool) const override {
    return GroupRole::kAttnTp;
  }
  int EmbeddingNdim() const override { return 3; }
  GroupRole DenseMlpGroup() const override { return GroupRole::kAttnTp; }

 protected:
  void ConfigureFusedLaunch(const GroupBackends& backends, const CallDesc& call,
                            DecisionRecord& record) const override;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_PR30700_POLICY_H_
