// Dispatch policies: the decisions the dispatch core takes, as one object.
// The base class *is* the reference design (SGLang after PR #30700); the
// known-bad mutants of faults/ derive from it and override one decision each,
// so the reference is never edited to make room for them.
//
//   PolicyRegistry registry;                          // "reference" only
//   faults::RegisterMutants(registry);                // plus the mutants
//   std::unique_ptr<DispatchPolicy> policy = *registry.Create("reference");
//   GroupCoordinator tp("tp", group, 4, rank_in_group, WorkspaceKind::kAttnTp,
//                       backends, policy.get());
//   DecisionRecord record;
//   absl::Status s = tp.AllReduce(tensor, &record);  // Choose, then Execute
//   // record.backend, record.algorithm, and every predicate's inputs

#ifndef LOCKSTEP_DISPATCH_POLICY_H_
#define LOCKSTEP_DISPATCH_POLICY_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dispatch/backend.h"
#include "dispatch/fusion_gate.h"
#include "dispatch/group_layout.h"
#include "dispatch/workspace.h"

namespace lockstep {

class DispatchPolicy {
 public:
  virtual ~DispatchPolicy() = default;

  virtual std::string_view name() const { return "reference"; }

  // Chooses the backend of one all-reduce and completes `record` (whose seq,
  // group and group_world_size the coordinator has set). Returns null only
  // for kSkip (a group of one rank). Reference: fused kernel if its CanUse
  // holds, else custom all-reduce if its CanUse holds, else NCCL.
  virtual CommBackend* Choose(const GroupBackends& backends, const CallDesc& call,
                              DecisionRecord& record) const;

  // Runs the chosen backend. Reference: run it and return its status as is;
  // an error is never followed by another backend (PR #30700 review).
  virtual absl::Status Execute(const GroupBackends& backends, CommBackend& chosen, Tensor& tensor,
                               DecisionRecord& record) const;

  // Which group objects own which fusion workspace.
  virtual WorkspaceTags TagGroups(const ParallelLayout& layout, bool fused_enabled) const;

  // The fusion gate and the post-experts reduction plan.
  virtual bool ShouldFuseMlpAllReduceWithNextLayer(const ParallelWidths& widths,
                                                   const FusionGateInputs& inputs) const;
  virtual PostExpertsPlan PlanPostExperts(const ParallelWidths& widths,
                                          bool fuse_with_next_layer) const;

  // The post-experts reduction of a pipeline stage's last MoE layer, flushed
  // before its activations go to the next stage. Reference: the layer's full
  // unfused plan (SGLang #28619 flushed over MOE_EP only).
  virtual PostExpertsPlan PlanPipelineFlush(const ParallelWidths& widths) const;

  // Whether this rank's workspace counts as initialised, given its own
  // allocation result and the AND of every member's (the cross-rank vote of
  // SGLang's _sync_allreduce_unavailable_across_tp). Reference: the vote.
  virtual bool WorkspaceInitialized(bool /*local_ok*/, bool all_ok) const { return all_ok; }
  // Same for the fused-kernel library. Reference: the vote.
  virtual bool LibraryAvailable(bool /*local_ok*/, bool all_ok) const { return all_ok; }

  // Tokens every rank pads the MoE input to under DP attention, given the
  // all-gathered per-rank counts. Reference: attention-DP width times the
  // largest gathered count (agreed by construction).
  virtual int64_t DpPaddedTokens(const std::vector<int64_t>& gathered, int64_t local_count,
                                 int attn_dp, const RankLocalState& local) const;

  // The group that reduces the speculative (EAGLE) draft model's projection.
  // Reference: ATTN_TP (SGLang #40399 reduced it over the full TP group).
  virtual GroupRole DraftProjectionGroup() const { return GroupRole::kAttnTp; }

  // Whether the MoE output, already complete and replicated on every rank
  // after its reduction, is all-reduced once more over ATTN_TP. Reference:
  // never (SGLang #31699 and #37199 did, scaling it by the group size).
  virtual bool ReduceReplicatedOutput(const ParallelWidths& /*widths*/) const { return false; }

 protected:
  // The fused and custom backends' admission, as Choose() asks it. Reference:
  // the backends' own CanUse (their reference predicates over agreed state).
  virtual bool FusedCanUse(const GroupBackends& backends, const CallDesc& call,
                           DecisionRecord& record) const {
    return backends.fused->CanUse(call, record);
  }
  virtual bool CustomCanUse(const GroupBackends& backends, const CallDesc& call,
                            DecisionRecord& record) const {
    return backends.custom->CanUse(call, record);
  }

  // Fills the algorithm and launch shape once the fused backend is chosen.
  // Reference: SelectFusedAlgorithm / FusedGridBlocks on the message size and
  // group size, fp32_acc = false (aligned with the fused AR + norm path).
  virtual void ConfigureFusedLaunch(const GroupBackends& backends, const CallDesc& call,
                                    DecisionRecord& record) const;
  // Fills the grid once the custom all-reduce is chosen. Reference:
  // CustomGridBlocks on the message size.
  virtual void ConfigureCustomLaunch(const GroupBackends& backends, const CallDesc& call,
                                     DecisionRecord& record) const;
};

// Named policies: "reference" and whatever else is registered (the mutants of
// faults/ register themselves through faults::RegisterMutants). A plain value,
// not a global: whoever builds a registry decides what is in it.
class PolicyRegistry {
 public:
  struct Entry {
    std::string name;
    std::string summary;  // one line: what the policy does differently
    std::string source;   // the bug or review it reproduces ("SGLang #28619")
    std::function<std::unique_ptr<DispatchPolicy>()> make;
  };

  // A registry holding the reference policy only.
  PolicyRegistry();

  // Adds a policy. AlreadyExists if the name is taken.
  absl::Status Register(Entry entry);

  // A fresh instance of the named policy. NotFound lists the known names.
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> Create(std::string_view name) const;

  const Entry* Find(std::string_view name) const;
  // Registration order; "reference" first.
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_POLICY_H_
