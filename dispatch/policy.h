// Dispatch policies: the decisions the dispatch core takes, as one object.
// The base class *is* the reference design — SGLang 0.5.23's dispatch
// (docs/FIDELITY.md) — and PR #30700's original design is another policy
// ("sglang-pr30700", dispatch/pr30700_policy.h). The known-bad mutants of
// faults/ derive from one of them and override one decision each, so neither
// is ever edited to make room for them.
//
//   PolicyRegistry registry;                          // reference, sglang-pr30700
//   faults::RegisterMutants(registry);                // plus the mutants
//   std::unique_ptr<DispatchPolicy> policy = *registry.Create("reference");
//   GroupCoordinator tp("tp", group, 4, rank_in_group, WorkspaceKind::kAttnTp,
//                       backends, policy.get());
//   DecisionRecord record;
//   absl::Status s = tp.AllReduce(tensor, &record);  // Choose, then Execute
//   // record.backend, record.algorithm, and every predicate's inputs
//   ExitPlan exit = policy->PlanFfnExit(widths, inputs);  // the layer's FFN exit

#ifndef LOCKSTEP_DISPATCH_POLICY_H_
#define LOCKSTEP_DISPATCH_POLICY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dispatch/backend.h"
#include "dispatch/group_layout.h"
#include "dispatch/layer_boundary.h"
#include "dispatch/rank_local_state.h"
#include "dispatch/serving_args.h"
#include "dispatch/workspace.h"

namespace lockstep {

// How attention-DP ranks lay out one step's gathered MoE input.
struct DpBatchPlan {
  // Gather the rows across the TP group (SGLang 0.5.23) rather than run the
  // MoE on locally padded rows with no gather (PR #30700's model).
  bool gather = true;
  DpPadding padding = DpPadding::kMaxLen;
  int64_t global_rows = 0;  // rows of the MoE input
  int64_t my_offset = 0;    // first row of this rank's attention-DP group
  // Rows of each group's slot in the gathered buffer (its tokens, aligned
  // as the policy aligns them); empty: the gathered counts as they are.
  std::vector<int64_t> group_rows;
};

// One step's speculative draft, as the scheduler sees it (every rank alike).
struct DraftStep {
  int64_t context_len = 0;    // the longest sequence's length this step
  int64_t draft_tokens = 1;   // tokens the draft proposes
  int64_t max_model_len = 0;  // the context limit (0: none)
};

class DispatchPolicy {
 public:
  virtual ~DispatchPolicy() = default;

  virtual std::string_view name() const { return "reference"; }

  // ---- One all-reduce. ----

  // Chooses the backend of one all-reduce and completes `record` (whose seq,
  // group and group_world_size the coordinator has set). Returns null only
  // for kSkip (a group of one rank). Reference (GroupCoordinator.all_reduce,
  // distributed/parallel_state.py:673-780 @ 0.5.23): a fused AR + norm on the
  // workspace the call names, when its predicates hold; else the fused
  // kAllReduce on the group's tagged workspace; else the custom all-reduce;
  // else NCCL.
  virtual CommBackend* Choose(const GroupBackends& backends, const CallDesc& call,
                              DecisionRecord& record) const;

  // Runs the chosen backend. Reference: run it and return its status as is;
  // an error is never followed by another backend (PR #30700 review).
  virtual absl::Status Execute(const GroupBackends& backends, CommBackend& chosen, Tensor& tensor,
                               DecisionRecord& record) const;

  // ---- Set-up: what every rank agrees on before the first call. ----

  // Which group objects own which fusion workspace for kAllReduce.
  virtual WorkspaceTags TagGroups(const ParallelLayout& layout, bool fused_enabled) const;
  // The role whose groups the MoE workspace rendezvouses on. Reference:
  // PostExpertsReductionRole (TP when EP and MoE-TP merge).
  virtual GroupRole MoeWorkspaceRole(const ParallelWidths& widths) const;
  // Whether the group object gets a custom all-reduce. Reference: objects
  // created for TP, ATTN_TP, ATTN_CP or MOE_DP; never a separate MOE_EP or
  // MOE_TP object, nor PP (parallel_state.py:2685-2969 @ 0.5.23).
  virtual bool ObjectHasCustomAllReduce(const GroupObject& object) const;
  // The custom all-reduce's generation and limits. Reference: SGLang's
  // (CustomAllReduceLimits); `configured_max_bytes` is the scenario's bound.
  virtual CustomAgreedState CustomLimits(const ServingArgs& args, const Platform& platform,
                                         int64_t configured_max_bytes) const;
  // The capacity rule of the kAllReduce predicates for `backend`.
  virtual FusedCapacityRule CapacityRule(FusionBackend backend) const;
  // Whether the fused AR + norm runs on the workspace the call site names
  // (SGLang 0.5.23) rather than through the group's tag (PR #30700).
  virtual bool NormOnNamedWorkspace() const { return true; }
  // Whether a failed workspace initialisation anywhere in the TP group turns
  // the fused path off on every rank of it (SGLang 0.5.23's process-global
  // unavailable flag, OR-synced over TP, flashinfer_comm_fusion.py:713-741),
  // rather than only that workspace (PR #30700's model).
  virtual bool WorkspaceFailureDisablesFusion() const { return true; }
  // Whether a rank whose own workspace allocation failed still joins the
  // set-up's collectives over the workspace's group (the preflight vote and
  // the handle exchange), so that its peers are not left in them. Reference:
  // yes — SGLang 0.5.23 probes the allocation and votes on it before any
  // exchange "so all ranks proceed or skip together"
  // (flashinfer_comm_fusion.py:329-393; vLLM PR #53377: the failing rank
  // "still joins the vote to keep the collective symmetric").
  virtual bool JoinSetUpAfterLocalFailure() const { return true; }
  // Whether this rank's workspace counts as initialised, given its own
  // allocation result and the AND of every member's (the rendezvous vote).
  // Reference: the vote.
  virtual bool WorkspaceInitialized(bool /*local_ok*/, bool all_ok) const { return all_ok; }
  // Whether the fused path is available on this rank, given its own view
  // (the library loaded and, with WorkspaceFailureDisablesFusion, its own
  // allocations done) and the AND of every TP peer's voted state (SGLang's
  // _sync_allreduce_unavailable_across_tp). Reference: the vote.
  virtual bool LibraryAvailable(bool /*local_ok*/, bool all_ok) const { return all_ok; }

  // ---- The model's structure: which sums each layer owes, and how. ----

  // The FFN exit of a layer. Reference: PlanFfnExit (layer_boundary.h).
  virtual ExitPlan PlanFfnExit(const ParallelWidths& widths, const ExitInputs& inputs) const;
  // The reductions that complete a non-last pipeline stage's last FFN before
  // its activations go to the next stage, given that layer's exit plan.
  // Reference: a deferred sum completes over its group (to_pp,
  // residual/batch.py:269-291), otherwise the exit's reductions run there
  // (SGLang #28619 flushed over MOE_EP only).
  virtual std::vector<GroupRole> PipelineFlushReductions(const ParallelWidths& widths,
                                                         const ExitPlan& exit) const;
  // One step's attention-DP layout, from the token counts every rank of the
  // TP group all-gathered (`gathered`), this rank's group and its own view.
  // Reference: each count aligned to attention TP (`attn_tp`), then
  // DpPaddingMode's choice, rows gathered across TP.
  virtual DpBatchPlan PlanDpBatch(const DpBatch& gathered, int attn_tp, int my_group,
                                  const RankLocalState& local) const;
  // The group the embedding output reduces over. Reference
  // (vocab_parallel_embedding.py:166-185): ATTN_TP for models that ask for it
  // under attention DP, else TP.
  virtual GroupRole EmbeddingGroup(const ParallelWidths& widths,
                                   bool model_uses_attn_tp_under_dp) const;
  // The embedding output's rank (SGLang 0.5.23: a 2-D [tokens, hidden]).
  virtual int EmbeddingNdim() const { return 2; }
  // The group a dense MLP's sum is owed over. Reference: TP
  // (layer_boundary/factories.py:184-192).
  virtual GroupRole DenseMlpGroup() const { return GroupRole::kTp; }
  // The group that reduces the speculative draft model's projection, given
  // the one the model declares. Reference: as declared (SGLang #40399 reduced
  // an attention-TP projection over the full TP group).
  virtual GroupRole DraftProjectionGroup(GroupRole declared) const { return declared; }
  // Whether the MoE output, already complete and replicated on every rank
  // after its reduction, is all-reduced once more over ATTN_TP. Reference:
  // never (SGLang #31699 and #37199 did, scaling it by the group size).
  virtual bool ReduceReplicatedOutput(const ParallelWidths& /*widths*/) const { return false; }

  // ---- The start-up autotuner (workload.autotune; docs/FAULTS.md). ----

  // Whether a rank whose tuning cache is warm still joins the tuner's
  // collectives over its TP group. Reference: yes — whether to tune at all is
  // agreed by the tuner's handshake (every member's cached tactic), so a warm
  // rank never leaves its cold peers waiting (FlashInfer RFC #3920, vLLM
  // #54618: a warm rank skipped the tuner's collectives).
  virtual bool JoinTunerWhenWarm() const { return true; }
  // The tactic, from every member's profile timings (`timings[c]`: candidate
  // c's time on each member, in the group's order) and this rank's own
  // (`mine[c]`). Reference: the candidate whose slowest member is fastest (a
  // collective runs at its slowest member's pace), the lowest index on ties:
  // the same on every member (FlashInfer #3186/#3187 picked from each rank's
  // own timings).
  virtual FusedTactic ChooseTactic(const std::vector<std::vector<int64_t>>& timings,
                                   const std::vector<int64_t>& mine) const;

  // ---- Speculative decoding (workload.speculative). ----

  // Whether this step's draft is skipped (its collectives with it): the
  // batch's context length as the scheduler holds it — the same on every rank
  // — plus the draft tokens would pass max_model_len. Reference: from that
  // agreed length, never from the rank's own count (vLLM #40589, #49027: a
  // skip decided per rank left its peers in the draft's collectives).
  virtual bool SkipDraft(const DraftStep& step, const RankLocalState& local) const;

  // ---- Time-based decisions (workload.abort_after_us). ----

  // The clock a step's time-based decisions (a request's timeout) read, from
  // every TP member's reading gathered with the batch (`gathered`, in the
  // group's order) and this rank's own (`mine`). Reference: the scheduler's —
  // the group's first member's, which broadcasts the batch — the same on every
  // rank (SGLang #27221: ranks aborted requests by their own clocks and their
  // batches diverged).
  virtual int64_t SchedulerClockUs(const std::vector<int64_t>& gathered, int64_t mine) const;

  // ---- CUDA graphs (workload.cuda_graph_tokens; docs/FAULTS.md). ----

  // The captured graph a decode step replays, as its batch size (nullopt:
  // the step runs eagerly), from the sizes this rank captured (`captured`,
  // ascending), the batch every member of the TP group runs (`agreed`: under
  // attention DP the largest group's count, all-gathered with the batch) and
  // this rank's own group's count (`mine`). Reference: the smallest captured
  // size >= the agreed batch, eager above the largest
  // (decode_cuda_graph_runner.py:871-896 and 1624-1628 @ 0.5.23: the largest
  // DP group's size under attention DP, with can_run_decode_cuda_graph
  // MIN-reduced over the DP ranks, scheduler_components/dp_attn.py:290) —
  // the same graph on every rank.
  virtual std::optional<int64_t> GraphReplayTokens(const std::vector<int64_t>& captured,
                                                   int64_t agreed, int64_t mine) const;
  // Whether the fused kernel reads its Lamport buffer index and the previous
  // call's size from the workspace's control block when it runs (the
  // reference), rather than taking them as launch arguments from a host-side
  // counter: a captured graph freezes those arguments at capture, and every
  // replay reuses them while the counter stands still (FlashInfer #3053,
  // vLLM #35772: a Lamport poll that never ends on piecewise-graph replay).
  virtual bool LamportStateOnDevice() const { return true; }
  // Whether the custom all-reduce's registration of captured graph inputs
  // first compares every member's count and raises when they differ, rather
  // than pairing inputs by position: sgl-kernel's register_graph_buffers
  // indexes each peer's handles by the local count, unchecked, so ranks that
  // captured different numbers read other calls' buffers (vLLM #39788; the
  // count check of vLLM PR #39791). Reference: compare.
  virtual bool CheckGraphInputCounts() const { return true; }
  // Whether a rank that captured no custom all-reduce input still joins the
  // registration exchange. Reference: yes, as v1 registers in `finally`
  // whatever it captured (custom_all_reduce.py:181-194 @ 0.5.23); v2's
  // `_register_graph_inputs` returns early (custom_all_reduce_v2.py:513-514),
  // leaving its peers in the all-gather.
  virtual bool RegisterWithoutGraphInputs() const { return true; }

 protected:
  // The fused, fused-norm and custom backends' admission, as Choose() asks
  // it. Reference: their reference predicates over agreed state.
  virtual bool FusedCanUse(const GroupBackends& backends, const CallDesc& call,
                           DecisionRecord& record) const {
    return backends.fused->CanUse(call, record);
  }
  virtual bool NormFusionCanUse(const GroupBackends& /*backends*/,
                                const FusedAllReduceBackend& backend, const CallDesc& call,
                                DecisionRecord& record) const {
    return FusedNormPredicatesHold(backend.agreed(), call, record);
  }
  virtual bool CustomCanUse(const GroupBackends& backends, const CallDesc& call,
                            DecisionRecord& record) const {
    return backends.custom->CanUse(call, record);
  }

  // Fills the algorithm and launch shape once the fused backend is chosen.
  // Reference: SelectFusedAlgorithm / FusedGridBlocks on the message size,
  // the group size and the agreed tactic (lockstep's kernels), fp32_acc =
  // true (SGLang 0.5.23 passes fp32_acc=True to both fused paths,
  // flashinfer_comm_fusion.py:1039-1040).
  virtual void ConfigureFusedLaunch(const GroupBackends& backends, const CallDesc& call,
                                    DecisionRecord& record) const;
  // Fills the grid once the custom all-reduce is chosen. Reference:
  // CustomGridBlocks on the message size.
  virtual void ConfigureCustomLaunch(const GroupBackends& backends, const CallDesc& call,
                                     DecisionRecord& record) const;
};

// Named policies: "reference", "sglang-pr30700" and whatever else is
// registered (the mutants of faults/ register themselves through
// faults::RegisterMutants). A plain value, not a global: whoever builds a
// registry decides what is in it.
class PolicyRegistry {
 public:
  struct Entry {
    std::string name;
    std::string summary;  // one line: what the policy does differently
    std::string source;   // the bug, review or release it reproduces ("SGLang #28619")
    std::function<std::unique_ptr<DispatchPolicy>()> make;
  };

  // A registry holding the reference policy and PR #30700's design.
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
