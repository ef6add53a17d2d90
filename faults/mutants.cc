#include "faults/mutants.h"

#include <algorithm>
#include <array>
#include <memory>

#include "dispatch/fused_launch.h"

namespace lockstep::faults {
namespace {

// --- The pre-review PR #30700 predicates, shared by several mutants. --------

// can_use_flashinfer_allreduce() as first written: the workspace matched by
// world size only, not by its exact peer set.
bool SizeOnlyFusedPredicates(const FusedAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  const TensorDesc& t = call.tensor;
  const Workspace* ws = s.workspace;
  r.hint = ws != nullptr ? ws->kind : WorkspaceKind::kNone;
  if (!r.Check(Predicate::kGroupTagged, ws != nullptr)) return false;
  if (!r.Check(Predicate::kLibraryAvailable, s.library_available)) return false;
  if (!r.Check(Predicate::kTwoDimensional, t.ndim == 2)) return false;
  if (!r.Check(Predicate::kContiguous, t.contiguous)) return false;
  r.workspace_initialized = ws->initialized;
  if (!r.Check(Predicate::kWorkspaceInitialized, ws->initialized)) return false;
  r.workspace_group = ws->group;
  r.workspace_world_size = ws->world_size;
  r.workspace_generation = ws->generation;
  if (!r.Check(Predicate::kWorkspaceWorldSize, ws->world_size == s.group_world_size)) return false;
  r.workspace_capacity = ws->capacity;
  if (!r.Check(Predicate::kTokensFit, t.tokens() <= ws->capacity.max_tokens)) return false;
  if (!r.Check(Predicate::kHiddenFits, t.hidden() <= ws->capacity.hidden)) return false;
  return r.Check(Predicate::kDtypeMatches, t.dtype == ws->capacity.dtype);
}

// --- The mutants. ------------------------------------------------------------

// PR #30700 review (mmangkad): flashinfer_allreduce() wrapped the kernel in
// try/except and fell back to NCCL on error. The failing rank then waits in
// NCCL while its peers wait in the kernel.
class SwallowKernelError : public DispatchPolicy {
 public:
  std::string_view name() const override { return "swallow-kernel-error"; }
  absl::Status Execute(const GroupBackends& b, CommBackend& chosen, Tensor& tensor,
                       DecisionRecord& record) const override {
    absl::Status s = chosen.AllReduce(tensor, record);
    if (s.ok() || b.nccl == nullptr || &chosen == b.nccl) return s;
    record.backend = BackendKind::kNccl;  // the silent fallback
    return b.nccl->AllReduce(tensor, record);
  }
};

// PR #30700 before review: _MOE_TP and _MOE_EP both tagged, the workspace
// matched by world size, and the post-experts reduction run as EP then
// MoE-TP (before SGLang merged them). At tp=4, ep=2 the MoE-TP all-reduce
// reduces over the EP peers of the EP-bound workspace.
class BothMoeGroupsTagged : public DispatchPolicy {
 public:
  std::string_view name() const override { return "both-moe-groups-tagged"; }
  WorkspaceTags TagGroups(const ParallelLayout& layout, bool enabled) const override {
    WorkspaceTags tags = DispatchPolicy::TagGroups(layout, enabled);
    if (enabled) {
      tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeEp))] =
          WorkspaceKind::kMoe;
      tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeTp))] =
          WorkspaceKind::kMoe;
      tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kAttnTp))] =
          WorkspaceKind::kAttnTp;
    }
    return tags;
  }
  PostExpertsPlan PlanPostExperts(const ParallelWidths& w, bool fuse) const override {
    PostExpertsPlan plan = DispatchPolicy::PlanPostExperts(w, fuse);
    if (plan.merged) {
      plan.merged = false;
      plan.reductions = {GroupRole::kMoeEp, GroupRole::kMoeTp};
    }
    return plan;
  }

 protected:
  bool FusedCanUse(const GroupBackends& b, const CallDesc& call, DecisionRecord& r) const override {
    return SizeOnlyFusedPredicates(b.fused->agreed(), call, r);
  }
};

// SGLang #32963 / #32012: should_fuse_mlp_allreduce_with_next_layer() without
// the hybrid gate; the next layer's fused AR + norm reduces over MOE_EP only.
class NoHybridFusionGate : public DispatchPolicy {
 public:
  std::string_view name() const override { return "no-hybrid-fusion-gate"; }
  bool ShouldFuseMlpAllReduceWithNextLayer(const ParallelWidths& w,
                                           const FusionGateInputs& in) const override {
    ParallelWidths pretend = w;
    pretend.moe_tp = 1;  // the gate never sees the hybrid layout
    return DispatchPolicy::ShouldFuseMlpAllReduceWithNextLayer(pretend, in);
  }
  PostExpertsPlan PlanPostExperts(const ParallelWidths& w, bool fuse) const override {
    PostExpertsPlan plan = DispatchPolicy::PlanPostExperts(w, fuse);
    if (fuse && w.moe_ep > 1) plan.fused_group = GroupRole::kMoeEp;
    return plan;
  }
};

// PR #30700's first can_use_flashinfer_allreduce(): the workspace matched by
// world size only; a workspace bound to an equal-size group of other peers
// reduces over them.
class WorkspaceMatchedBySize : public DispatchPolicy {
 public:
  std::string_view name() const override { return "workspace-matched-by-size"; }

 protected:
  bool FusedCanUse(const GroupBackends& b, const CallDesc& call, DecisionRecord& r) const override {
    return SizeOnlyFusedPredicates(b.fused->agreed(), call, r);
  }
};

// SGLang #23317 / #36943 (vLLM #39788): capacity read from the rank's own
// autotuner/allocator state instead of the agreed workspace capacity.
class CapacityFromLocalView : public DispatchPolicy {
 public:
  std::string_view name() const override { return "capacity-from-local-view"; }

 protected:
  bool FusedCanUse(const GroupBackends& b, const CallDesc& call, DecisionRecord& r) const override {
    if (!b.fused->CanUse(call, r)) return false;
    const Workspace& ws = *b.fused->agreed().workspace;
    const int64_t view = b.local != nullptr && b.local->max_tokens_view >= 0
                             ? b.local->max_tokens_view
                             : ws.capacity.max_tokens;
    r.workspace_capacity.max_tokens = view;
    return r.Check(Predicate::kTokensFit, call.tensor.tokens() <= view);
  }
};

// SGLang #28619: the post-experts reduction flushed at a pipeline-stage
// boundary reduced over MOE_EP only and skipped MoE-TP.
class PipelineFlushEpOnly : public DispatchPolicy {
 public:
  std::string_view name() const override { return "pp-flush-ep-only"; }
  PostExpertsPlan PlanPipelineFlush(const ParallelWidths& w) const override {
    PostExpertsPlan plan;
    if (w.moe_ep > 1)
      plan.reductions = {GroupRole::kMoeEp};
    else if (w.moe_tp > 1)
      plan.reductions = {GroupRole::kMoeTp};
    return plan;
  }
};

// SGLang #31699 / #37199: an all-reduce of output that every rank already
// holds complete, scaling it by the group size.
class AllReduceReplicatedOutput : public DispatchPolicy {
 public:
  std::string_view name() const override { return "allreduce-replicated-output"; }
  bool ReduceReplicatedOutput(const ParallelWidths& w) const override { return w.attn_tp > 1; }
};

// SGLang #40399: the EAGLE draft model's projection reduced over the full TP
// group instead of attention TP, mixing attention-DP groups.
class DraftProjectionOverTp : public DispatchPolicy {
 public:
  std::string_view name() const override { return "draft-projection-over-tp"; }
  GroupRole DraftProjectionGroup() const override { return GroupRole::kTp; }
};

// SGLang before _sync_allreduce_unavailable_across_tp: a rank whose workspace
// allocation failed falls back on its own while its peers use the workspace.
class InitFailureWithoutVote : public DispatchPolicy {
 public:
  std::string_view name() const override { return "init-failure-without-vote"; }
  bool WorkspaceInitialized(bool local_ok, bool) const override { return local_ok; }
  bool LibraryAvailable(bool local_ok, bool) const override { return local_ok; }
};

// vLLM #43616: the custom all-reduce grid sized from the local device's SM
// count; ranks with other devices launch other grids, and the per-block
// barrier flags of the extra blocks are never answered.
class PerRankGridSize : public DispatchPolicy {
 public:
  std::string_view name() const override { return "per-rank-grid-size"; }

 protected:
  void ConfigureCustomLaunch(const GroupBackends& b, const CallDesc& call,
                             DecisionRecord& r) const override {
    DispatchPolicy::ConfigureCustomLaunch(b, call, r);
    const int sms = b.local != nullptr ? b.local->sm_count : 132;
    r.blocks = std::max(1, std::min(r.blocks * 4, sms / 4));
  }
};

// FlashInfer MNNVL kernels' comment: a sentinel test written as
// `v == 0 && signbit(v)`; under flush-to-zero a peer's negative subnormal
// reads as −0 and the poll never ends.
class SentinelZeroAndSignbit : public DispatchPolicy {
 public:
  std::string_view name() const override { return "sentinel-zero-and-signbit"; }

 protected:
  void ConfigureFusedLaunch(const GroupBackends& b, const CallDesc& call,
                            DecisionRecord& r) const override {
    DispatchPolicy::ConfigureFusedLaunch(b, call, r);
    r.kernel_flags = static_cast<uint8_t>(r.kernel_flags & ~kExactSentinel);
  }
};

// fp32 accumulation switched on per rank by an environment override
// (PR #30700 review: fp32_acc must match the fused path on every rank).
class Fp32AccFromRankEnv : public DispatchPolicy {
 public:
  std::string_view name() const override { return "fp32-acc-from-rank-env"; }

 protected:
  void ConfigureFusedLaunch(const GroupBackends& b, const CallDesc& call,
                            DecisionRecord& r) const override {
    DispatchPolicy::ConfigureFusedLaunch(b, call, r);
    if (b.local != nullptr && b.local->fp32_acc_env) r.fp32_acc = true;
  }
};

// The pre-vote dispatch as a whole: every predicate input read from the
// rank's own raw state (its workspace flag, capacity view, dtype cache,
// contiguity cache, backend flag, tracing and capture state, token count).
class LocalPredicates : public DispatchPolicy {
 public:
  std::string_view name() const override { return "local-predicates"; }
  int64_t DpPaddedTokens(const std::vector<int64_t>&, int64_t local_count, int attn_dp,
                         const RankLocalState& local) const override {
    return (local_count + local.token_count_skew) * attn_dp;
  }

 protected:
  bool FusedCanUse(const GroupBackends& b, const CallDesc& call, DecisionRecord& r) const override {
    if (!b.fused->CanUse(call, r)) return false;
    const RankLocalState* local = b.local;
    if (local == nullptr) return true;
    if (!r.Check(Predicate::kLibraryAvailable,
                 local->library_loaded && local->fused_backend_flag && !local->tracing)) {
      return false;
    }
    if (!r.Check(Predicate::kContiguous, local->contiguous_view)) return false;
    if (!r.Check(Predicate::kWorkspaceInitialized,
                 local->workspace_initialized_view && local->workspace_allocated)) {
      return false;
    }
    const int64_t capacity = local->max_tokens_view >= 0
                                 ? local->max_tokens_view
                                 : b.fused->agreed().workspace->capacity.max_tokens;
    if (!r.Check(Predicate::kTokensFit, call.tensor.tokens() <= capacity)) return false;
    return r.Check(Predicate::kDtypeMatches,
                   local->dtype_seen == DType::kUnset || local->dtype_seen == call.tensor.dtype);
  }
  // A rank that believes it is capturing a graph skips the custom all-reduce.
  bool CustomCanUse(const GroupBackends& b, const CallDesc& call,
                    DecisionRecord& r) const override {
    if (!b.custom->CanUse(call, r)) return false;
    return b.local == nullptr || !b.local->graph_capturing;
  }
};

template <typename Policy>
std::unique_ptr<DispatchPolicy> Make() {
  return std::make_unique<Policy>();
}

struct MutantEntry {
  MutantInfo info;
  std::unique_ptr<DispatchPolicy> (*make)();
};

const std::array<MutantEntry, 13>& Entries() {
  static const std::array<MutantEntry, 13> kEntries = {{
      {{"swallow-kernel-error", "a failing fused kernel falls back to NCCL on its own rank",
        "SGLang PR #30700 review (try/except fallback)", Verdict::kHang, "kernel_launch_failure"},
       &Make<SwallowKernelError>},
      {{"both-moe-groups-tagged",
        "MOE_EP and MOE_TP both tagged, workspace matched by size, EP then MoE-TP reductions",
        "SGLang PR #30700 review (tags on both MoE groups)", Verdict::kWrongPeer,
        "hybrid EP+TP layouts (tp4·ep2)"},
       &Make<BothMoeGroupsTagged>},
      {{"no-hybrid-fusion-gate",
        "post-experts all-reduce fused into the next layer under hybrid EP+TP",
        "SGLang #32963, #32012 (Qwen3-30B-A3B tp4 ep2 garbage, DSV4 GSM8K 0.012)",
        Verdict::kWrongPeer, "hybrid EP+TP with a model that fuses AR + norm"},
       &Make<NoHybridFusionGate>},
      {{"workspace-matched-by-size", "the workspace accepted when only its world size matches",
        "SGLang PR #30700 (first can_use_flashinfer_allreduce)", Verdict::kWrongPeer,
        "workspace_bound_to_other_peers"},
       &Make<WorkspaceMatchedBySize>},
      {{"capacity-from-local-view", "capacity checked against the rank's own autotuner view",
        "SGLang #23317, #36943; vLLM #39788 (per-rank buffer sizes)", Verdict::kHang,
        "capacity_view"},
       &Make<CapacityFromLocalView>},
      {{"pp-flush-ep-only", "the pipeline-boundary flush reduces over MOE_EP only", "SGLang #28619",
        Verdict::kWrongPeer, "pp2 x hybrid EP+TP"},
       &Make<PipelineFlushEpOnly>},
      {{"allreduce-replicated-output", "the complete, replicated MoE output reduced again",
        "SGLang #31699, #37199", Verdict::kWrongPeer, "any MoE layout with attention TP > 1"},
       &Make<AllReduceReplicatedOutput>},
      {{"draft-projection-over-tp",
        "the draft model's projection reduced over TP instead of attention TP", "SGLang #40399",
        Verdict::kWrongPeer, "DP attention with speculative decoding"},
       &Make<DraftProjectionOverTp>},
      {{"init-failure-without-vote", "workspace/library failures acted on per rank, unvoted",
        "SGLang _sync_allreduce_unavailable_across_tp", Verdict::kHang, "workspace_alloc_failure"},
       &Make<InitFailureWithoutVote>},
      {{"per-rank-grid-size", "custom all-reduce grid sized from the local SM count", "vLLM #43616",
        Verdict::kHang, "sm_count_divergence"},
       &Make<PerRankGridSize>},
      {{"sentinel-zero-and-signbit", "Lamport sentinel tested as v == 0 && signbit(v)",
        "FlashInfer MNNVL all-reduce (sentinel under flush-to-zero)", Verdict::kHang,
        "negative_subnormal_inputs"},
       &Make<SentinelZeroAndSignbit>},
      {{"fp32-acc-from-rank-env", "fp32 accumulation on the ranks whose environment asks for it",
        "SGLang PR #30700 review (fp32_acc must match on every rank)", Verdict::kDivergence,
        "fp32_acc_env"},
       &Make<Fp32AccFromRankEnv>},
      {{"local-predicates", "every predicate input read from rank-local raw state",
        "SGLang PR #30700 review (all checks must be rank-invariant)", Verdict::kHang,
        "the predicate-input faults"},
       &Make<LocalPredicates>},
  }};
  return kEntries;
}

}  // namespace

std::span<const MutantInfo> AllMutants() {
  static const std::vector<MutantInfo> kInfos = [] {
    std::vector<MutantInfo> v;
    for (const MutantEntry& e : Entries()) v.push_back(e.info);
    return v;
  }();
  return kInfos;
}

void RegisterMutants(PolicyRegistry& registry) {
  for (const MutantEntry& e : Entries()) {
    (void)registry.Register(PolicyRegistry::Entry{
        std::string(e.info.name), std::string(e.info.summary), std::string(e.info.source), e.make});
  }
}

PolicyRegistry MakePolicyRegistry() {
  PolicyRegistry registry;
  RegisterMutants(registry);
  return registry;
}

}  // namespace lockstep::faults
