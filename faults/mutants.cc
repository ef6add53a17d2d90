#include "faults/mutants.h"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "dispatch/fused_launch.h"
#include "dispatch/pr30700_policy.h"

namespace lockstep::faults {
namespace {

// --- Predicate variants shared by several mutants. ---------------------------

// can_use_flashinfer_allreduce() as first written: the workspace matched by
// world size only, not by its exact peer set. The same weakening on the fused
// norm's named workspace.
FusedAgreedState WithGroupOfWorkspace(FusedAgreedState state) {
  if (state.workspace != nullptr) state.group = state.workspace->group;
  return state;
}
bool SizeOnlyFusedPredicates(const FusedAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  return FusedPredicatesHold(WithGroupOfWorkspace(s), call, r);
}
bool SizeOnlyNormPredicates(const FusedAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  return FusedNormPredicatesHold(WithGroupOfWorkspace(s), call, r);
}

// The capacity as the rank's own autotuner/allocator sees it.
bool LocalCapacityHolds(const RankLocalState* local, const Workspace& ws, const CallDesc& call,
                        DecisionRecord& r) {
  const int64_t view = local != nullptr && local->max_tokens_view >= 0 ? local->max_tokens_view
                                                                       : ws.capacity.max_tokens;
  r.workspace_capacity.max_tokens = view;
  return r.Check(Predicate::kTokensFit, call.tensor.tokens() <= view);
}

// Every fused predicate input read from the rank's own raw state.
bool LocalStateHolds(const RankLocalState* local, const Workspace& ws, const CallDesc& call,
                     DecisionRecord& r) {
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
  if (!LocalCapacityHolds(local, ws, call, r)) return false;
  return r.Check(Predicate::kDtypeMatches,
                 local->dtype_seen == DType::kUnset || local->dtype_seen == call.tensor.dtype);
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
    record.norm_fused = false;
    return b.nccl->AllReduce(tensor, record);
  }
};

// PR #30700 before review: _MOE_TP and _MOE_EP both tagged, the workspace
// matched by world size, and the post-experts reduction run as EP then
// MoE-TP (before SGLang merged them). At tp=4, ep=2 the MoE-TP all-reduce
// reduces over the EP peers of the EP-bound workspace. A bug of PR #30700's
// design, so it derives from that policy (the MoE workspace on MOE_EP).
class BothMoeGroupsTagged : public Pr30700Policy {
 public:
  std::string_view name() const override { return "both-moe-groups-tagged"; }
  WorkspaceTags TagGroups(const ParallelLayout& layout, bool enabled) const override {
    WorkspaceTags tags = Pr30700Policy::TagGroups(layout, enabled);
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
  ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const override {
    ExitPlan plan = Pr30700Policy::PlanFfnExit(w, in);
    if (plan.merged && plan.kind == ExitKind::kCompleteNow) {
      plan.merged = false;
      plan.reductions = {GroupRole::kMoeEp, GroupRole::kMoeTp};
    }
    return plan;
  }
  std::vector<GroupRole> PipelineFlushReductions(const ParallelWidths& w,
                                                 const ExitPlan& exit) const override {
    std::vector<GroupRole> out = Pr30700Policy::PipelineFlushReductions(w, exit);
    if (out.size() == 1 && out.front() == GroupRole::kTp && w.MergesPostExperts()) {
      out = {GroupRole::kMoeEp, GroupRole::kMoeTp};
    }
    return out;
  }

 protected:
  bool FusedCanUse(const GroupBackends& b, const CallDesc& call, DecisionRecord& r) const override {
    return SizeOnlyFusedPredicates(b.fused->agreed(), call, r);
  }
};

// SGLang #32963 / #32012: the post-experts sum of a hybrid EP+TP layout
// deferred into the next layer's fused AR + norm, which reduces over MOE_EP
// only (half the peers). SGLang 0.5.23 defers only over the TP object and
// never for a hybrid layout; this mutant drops that safeguard.
class NoHybridFusionGate : public DispatchPolicy {
 public:
  std::string_view name() const override { return "no-hybrid-fusion-gate"; }
  ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const override {
    ExitPlan plan = DispatchPolicy::PlanFfnExit(w, in);
    if (!w.IsHybridEpTp() || in.ffn != FfnKind::kMoe || in.terminal || in.tokens <= 0) {
      return plan;
    }
    plan.group = GroupRole::kMoeEp;
    plan.reductions.clear();
    plan.kind = w.DpAttention() ? ExitKind::kDeferAllReduceScatter : ExitKind::kDefer;
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
  bool NormFusionCanUse(const GroupBackends&, const FusedAllReduceBackend& backend,
                        const CallDesc& call, DecisionRecord& r) const override {
    return SizeOnlyNormPredicates(backend.agreed(), call, r);
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
    return LocalCapacityHolds(b.local, *b.fused->agreed().workspace, call, r);
  }
  bool NormFusionCanUse(const GroupBackends& b, const FusedAllReduceBackend& backend,
                        const CallDesc& call, DecisionRecord& r) const override {
    if (!DispatchPolicy::NormFusionCanUse(b, backend, call, r)) return false;
    return LocalCapacityHolds(b.local, *backend.agreed().workspace, call, r);
  }
};

// SGLang #28619: the post-experts reduction flushed at a pipeline-stage
// boundary reduced over MOE_EP only and skipped MoE-TP.
class PipelineFlushEpOnly : public DispatchPolicy {
 public:
  std::string_view name() const override { return "pp-flush-ep-only"; }
  std::vector<GroupRole> PipelineFlushReductions(const ParallelWidths& w,
                                                 const ExitPlan&) const override {
    if (w.moe_ep > 1) return {GroupRole::kMoeEp};
    if (w.moe_tp > 1) return {GroupRole::kMoeTp};
    return {};
  }
};

// SGLang #31699 / #37199: an all-reduce of output that every rank already
// holds complete, scaling it by the group size.
class AllReduceReplicatedOutput : public DispatchPolicy {
 public:
  std::string_view name() const override { return "allreduce-replicated-output"; }
  bool ReduceReplicatedOutput(const ParallelWidths& w) const override { return w.attn_tp > 1; }
};

// SGLang #40399: the EAGLE draft model's projection, declared over attention
// TP, reduced over the full TP group, mixing attention-DP groups.
class DraftProjectionOverTp : public DispatchPolicy {
 public:
  std::string_view name() const override { return "draft-projection-over-tp"; }
  GroupRole DraftProjectionGroup(GroupRole) const override { return GroupRole::kTp; }
};

// SGLang before _sync_allreduce_unavailable_across_tp: a rank whose workspace
// allocation failed falls back on its own while its peers use the workspace.
class InitFailureWithoutVote : public DispatchPolicy {
 public:
  std::string_view name() const override { return "init-failure-without-vote"; }
  bool WorkspaceInitialized(bool local_ok, bool) const override { return local_ok; }
  bool LibraryAvailable(bool local_ok, bool) const override { return local_ok; }
};

// The hang SGLang's workspace preflight exists to prevent
// (flashinfer_comm_fusion.py:337-342 @ 0.5.23; vLLM PR #53377): a rank whose
// allocation failed leaves the set-up before its collectives, and its peers
// wait in the handle exchange for it.
class SetUpFailureSkipsExchange : public DispatchPolicy {
 public:
  std::string_view name() const override { return "setup-failure-skips-exchange"; }
  bool JoinSetUpAfterLocalFailure() const override { return false; }
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

// --- Lamport protocol safeguards (kernel flags), each removed. --------------
// Each mutant launches the reference's kernels with one KernelFlag cleared
// (dispatch/decision.h; kernels/protocol/lamport.h and block_barrier.h say
// what each guards). A flag belongs to one kernel — the Lamport bits to the
// fused launch, kReleaseFlags to the custom one — so clearing it in both
// launches weakens exactly the kernel that has it.
template <const char* kName, KernelFlag kFlag>
class WithoutKernelFlag : public DispatchPolicy {
 public:
  std::string_view name() const override { return kName; }

 protected:
  void ConfigureFusedLaunch(const GroupBackends& b, const CallDesc& call,
                            DecisionRecord& r) const override {
    DispatchPolicy::ConfigureFusedLaunch(b, call, r);
    r.kernel_flags = static_cast<uint8_t>(r.kernel_flags & ~kFlag);
  }
  void ConfigureCustomLaunch(const GroupBackends& b, const CallDesc& call,
                             DecisionRecord& r) const override {
    DispatchPolicy::ConfigureCustomLaunch(b, call, r);
    r.kernel_flags = static_cast<uint8_t>(r.kernel_flags & ~kFlag);
  }
};

// FlashInfer MNNVL kernels' comment: a sentinel test written as
// `v == 0 && signbit(v)`; under flush-to-zero a peer's negative subnormal
// reads as −0 and the poll never ends.
inline constexpr char kSentinelZeroAndSignbit[] = "sentinel-zero-and-signbit";
using SentinelZeroAndSignbit = WithoutKernelFlag<kSentinelZeroAndSignbit, kExactSentinel>;

// The Lamport kernel pushes its inputs as they are: a −0 input is the
// sentinel, so its readers take the element as not yet written and poll
// forever. The reference rewrites −0 to +0 before pushing (kSanitizeInputs),
// as the Lamport all-reduce kernels of TensorRT-LLM and FlashInfer do.
inline constexpr char kNoInputSanitising[] = "no-input-sanitising";
using NoInputSanitising = WithoutKernelFlag<kNoInputSanitising, kSanitizeInputs>;

// The clear of the previous call's Lamport buffer trusted without reading it
// back: a clear that did not take (a lost store) leaves the previous call's
// data, which the next call in that buffer reads as fresh (TensorRT-LLM #6237:
// stale data when the previous call was larger). The reference reads the
// cleared range back and raises (kVerifyClear).
inline constexpr char kNoClearReadback[] = "no-clear-readback";
using NoClearReadback = WithoutKernelFlag<kNoClearReadback, kVerifyClear>;

// TensorRT-LLM #6237 (nvbugs/5399355): the previous buffer cleared for the
// size of the current call. After a larger call, its tail survives the clear
// and reads back as the sentinel-free data of the next larger call in that
// buffer. The fix tracks the previous call's size (LamportState::clear_elems).
inline constexpr char kClearSizedByCurrentCall[] = "clear-sized-by-current-call";
using ClearSizedByCurrentCall =
    WithoutKernelFlag<kClearSizedByCurrentCall, kClearPreviousFootprint>;

// One-shot slots summed from the rank's own slot on: every rank rounds in
// another order, so members of one group end with different bits (the
// reference sums in rank order, as TensorRT-LLM's and FlashInfer's one-shot
// kernels do, so that replicas stay bitwise identical).
inline constexpr char kSumFromOwnRank[] = "sum-from-own-rank";
using SumFromOwnRank = WithoutKernelFlag<kSumFromOwnRank, kRankOrderSum>;

// Two Lamport buffers instead of three: the buffer a call clears is the one a
// peer already in the next call writes into, so the clear can erase the
// peer's data (the reason TensorRT-LLM's and FlashInfer's MNNVL workspaces
// keep NUM_LAMPORT_BUFFERS = 3).
inline constexpr char kTwoBufferRotation[] = "two-buffer-rotation";
using TwoBufferRotation = WithoutKernelFlag<kTwoBufferRotation, kThreeBufferRotation>;

// Lamport polls without a bound: a peer that died or never launched leaves
// its readers spinning for ever, where the reference's bounded wait ends the
// call naming the peer (FlashInfer #3053's hang is such a spin).
inline constexpr char kUnboundedKernelWait[] = "unbounded-kernel-wait";
using UnboundedKernelWait = WithoutKernelFlag<kUnboundedKernelWait, kBoundedWaits>;

// The accumulation type taken from each rank's environment (PR #30700
// review: fp32_acc must match the fused path on every rank).
class Fp32AccFromRankEnv : public DispatchPolicy {
 public:
  std::string_view name() const override { return "fp32-acc-from-rank-env"; }

 protected:
  void ConfigureFusedLaunch(const GroupBackends& b, const CallDesc& call,
                            DecisionRecord& r) const override {
    DispatchPolicy::ConfigureFusedLaunch(b, call, r);
    r.fp32_acc = b.local != nullptr && b.local->fp32_acc_env;
  }
};

// The pre-vote dispatch as a whole: every predicate input read from the
// rank's own raw state (its workspace flag, capacity view, dtype cache,
// contiguity cache, backend flag, tracing and capture state, token count).
class LocalPredicates : public DispatchPolicy {
 public:
  std::string_view name() const override { return "local-predicates"; }
  DpBatchPlan PlanDpBatch(const DpBatch& gathered, int attn_tp, int my_group,
                          const RankLocalState& local) const override {
    // The rank pads to what it believes every group holds: its own count.
    DpBatch believed = gathered;
    const int64_t mine = gathered.tokens[static_cast<size_t>(my_group)] + local.token_count_skew;
    for (int64_t& t : believed.tokens) t = mine;
    return DispatchPolicy::PlanDpBatch(believed, attn_tp, my_group, local);
  }

 protected:
  bool FusedCanUse(const GroupBackends& b, const CallDesc& call, DecisionRecord& r) const override {
    if (!b.fused->CanUse(call, r)) return false;
    return LocalStateHolds(b.local, *b.fused->agreed().workspace, call, r);
  }
  bool NormFusionCanUse(const GroupBackends& b, const FusedAllReduceBackend& backend,
                        const CallDesc& call, DecisionRecord& r) const override {
    if (!DispatchPolicy::NormFusionCanUse(b, backend, call, r)) return false;
    return LocalStateHolds(b.local, *backend.agreed().workspace, call, r);
  }
  // A rank that believes it is capturing a graph skips the custom all-reduce.
  bool CustomCanUse(const GroupBackends& b, const CallDesc& call,
                    DecisionRecord& r) const override {
    if (!b.custom->CanUse(call, r)) return false;
    return b.local == nullptr || !b.local->graph_capturing;
  }
};

// --- One predicate input read from the rank's own state, each. ------------
// local-predicates reads them all from local state at once; each mutant below
// reads exactly one, so that each input's agreement is a safeguard of its own
// (SGLang PR #30700 review: every check of can_use_flashinfer_allreduce must
// be rank-invariant). The reference check runs first; the local one can only
// turn the fused path off on the rank whose view differs.
template <const char* kName,
          bool (*kLocalHolds)(const RankLocalState&, const CallDesc&, DecisionRecord&)>
class OneInputFromLocalView : public DispatchPolicy {
 public:
  std::string_view name() const override { return kName; }

 protected:
  bool FusedCanUse(const GroupBackends& b, const CallDesc& call, DecisionRecord& r) const override {
    if (!b.fused->CanUse(call, r)) return false;
    return b.local == nullptr || kLocalHolds(*b.local, call, r);
  }
  bool NormFusionCanUse(const GroupBackends& b, const FusedAllReduceBackend& backend,
                        const CallDesc& call, DecisionRecord& r) const override {
    if (!DispatchPolicy::NormFusionCanUse(b, backend, call, r)) return false;
    return b.local == nullptr || kLocalHolds(*b.local, call, r);
  }
};

bool LocalWorkspaceFlag(const RankLocalState& l, const CallDesc&, DecisionRecord& r) {
  return r.Check(Predicate::kWorkspaceInitialized,
                 l.workspace_initialized_view && l.workspace_allocated);
}
bool LocalDtypeCache(const RankLocalState& l, const CallDesc& call, DecisionRecord& r) {
  return r.Check(Predicate::kDtypeMatches,
                 l.dtype_seen == DType::kUnset || l.dtype_seen == call.tensor.dtype);
}
bool LocalContiguity(const RankLocalState& l, const CallDesc&, DecisionRecord& r) {
  return r.Check(Predicate::kContiguous, l.contiguous_view);
}
bool LocalBackendFlag(const RankLocalState& l, const CallDesc&, DecisionRecord& r) {
  return r.Check(Predicate::kLibraryAvailable, l.fused_backend_flag);
}
bool LocalTracing(const RankLocalState& l, const CallDesc&, DecisionRecord& r) {
  return r.Check(Predicate::kLibraryAvailable, !l.tracing);
}

inline constexpr char kWorkspaceFlagFromLocalView[] = "workspace-flag-from-local-view";
inline constexpr char kDtypeFromLocalCache[] = "dtype-from-local-cache";
inline constexpr char kContiguityFromLocalView[] = "contiguity-from-local-view";
inline constexpr char kBackendFlagFromLocalEnv[] = "backend-flag-from-local-env";
inline constexpr char kTracingFromLocalState[] = "tracing-from-local-state";
using WorkspaceFlagFromLocalView =
    OneInputFromLocalView<kWorkspaceFlagFromLocalView, &LocalWorkspaceFlag>;
using DtypeFromLocalCache = OneInputFromLocalView<kDtypeFromLocalCache, &LocalDtypeCache>;
using ContiguityFromLocalView = OneInputFromLocalView<kContiguityFromLocalView, &LocalContiguity>;
using BackendFlagFromLocalEnv = OneInputFromLocalView<kBackendFlagFromLocalEnv, &LocalBackendFlag>;
using TracingFromLocalState = OneInputFromLocalView<kTracingFromLocalState, &LocalTracing>;

// The custom all-reduce skipped by a rank that believes it is capturing a
// CUDA graph while its peers are not (the capture state read per rank).
class GraphCaptureFromLocalState : public DispatchPolicy {
 public:
  std::string_view name() const override { return "graph-capture-from-local-state"; }

 protected:
  bool CustomCanUse(const GroupBackends& b, const CallDesc& call,
                    DecisionRecord& r) const override {
    if (!b.custom->CanUse(call, r)) return false;
    return b.local == nullptr || !b.local->graph_capturing;
  }
};

// The CUDA graph a step replays chosen from the rank's own attention-DP
// group's batch, not the largest group's that every rank gathered: groups
// of different sizes replay graphs of different sizes, and their collectives
// over TP carry different shapes (SGLang 0.5.23 pads the largest group's
// size, decode_cuda_graph_runner.py:871-872, 1624-1626).
class GraphReplayFromLocalBatch : public DispatchPolicy {
 public:
  std::string_view name() const override { return "graph-replay-from-local-batch"; }
  std::optional<int64_t> GraphReplayTokens(const std::vector<int64_t>& captured, int64_t agreed,
                                           int64_t mine) const override {
    return DispatchPolicy::GraphReplayTokens(captured, mine, agreed);
  }
};

// ROCm/aiter #3928: the Lamport buffer index and the previous call's size
// kept in a host-side counter and passed to each launch, so that a captured
// graph replays the values its capture froze while the counter stands still.
// Graphs of different sizes, and eager calls between replays, then reuse a
// buffer out of the rotation: a call reads data an earlier call left there
// as its own, or clears a buffer its peers are filling.
class LamportCounterOnHost : public DispatchPolicy {
 public:
  std::string_view name() const override { return "lamport-counter-on-host"; }
  bool LamportStateOnDevice() const override { return false; }
};

// vLLM #39788 (PR #39791 added the check): the custom all-reduce's captured
// graph inputs registered by position without comparing counts, as
// sgl-kernel's register_graph_buffers does — each peer's handles indexed by
// the local count. Ranks that captured different numbers pair other calls'
// buffers, or read past a peer's list, and replays sum the wrong data.
class GraphRegistrationUnchecked : public DispatchPolicy {
 public:
  std::string_view name() const override { return "graph-registration-unchecked"; }
  bool CheckGraphInputCounts() const override { return false; }
};

// SGLang 0.5.23's CustomAllReduceV2._register_graph_inputs returns early when
// the rank captured no input (custom_all_reduce_v2.py:513-514): its peers wait
// in the registration's all-gather while it goes on to replay.
class GraphRegistrationSkippedWhenEmpty : public DispatchPolicy {
 public:
  std::string_view name() const override { return "graph-registration-skipped-when-empty"; }
  bool RegisterWithoutGraphInputs() const override { return false; }
};

// FlashInfer #3186/#3187 (SGLang #23317 the same class): the autotuner's
// tactic picked from the rank's own profile timings. A rank whose timings
// favour another cut-over runs the other algorithm for the messages in
// between, while its peers run this one.
class TacticFromLocalTimings : public DispatchPolicy {
 public:
  std::string_view name() const override { return "tactic-from-local-timings"; }
  FusedTactic ChooseTactic(const std::vector<std::vector<int64_t>>&,
                           const std::vector<int64_t>& mine) const override {
    FusedTactic best;
    for (size_t c = 0; c < mine.size(); ++c) {
      if (mine[c] < mine[static_cast<size_t>(best.candidate)]) best.candidate = static_cast<int>(c);
    }
    return best;
  }
};

// FlashInfer RFC #3920, vLLM #54618: a rank whose tuning cache is warm skips
// the tuner — and its collectives — while its cold peers wait in them.
class WarmCacheSkipsTuner : public DispatchPolicy {
 public:
  std::string_view name() const override { return "warm-cache-skips-tuner"; }
  bool JoinTunerWhenWarm() const override { return false; }
};

// vLLM #40589, #49027: the speculative skip decided from the rank's own
// count of the sequence's length. A rank one token ahead skips the draft —
// and its all-reduce — one step before its peers: its next call meets their
// draft projection.
class SpecSkipFromLocalLength : public DispatchPolicy {
 public:
  std::string_view name() const override { return "spec-skip-from-local-length"; }
  bool SkipDraft(const DraftStep& step, const RankLocalState& local) const override {
    DraftStep mine = step;
    mine.context_len += local.context_len_skew;
    return DispatchPolicy::SkipDraft(mine, local);
  }
};

// SGLang #27221: a request's timeout checked against the rank's own clock.
// A rank whose clock reads ahead aborts the request a step before its peers,
// and its batch — every call's token count — differs from theirs.
class AbortFromLocalClock : public DispatchPolicy {
 public:
  std::string_view name() const override { return "abort-from-local-clock"; }
  int64_t SchedulerClockUs(const std::vector<int64_t>&, int64_t mine) const override {
    return mine;
  }
};

// --- Layer-boundary rules of SGLang 0.5.23, each removed. ------------------

// _sum_deferral_allowed (exit.py:150-175 @ 0.5.23) never defers the last
// layer's sum: the final norm takes no pending sum (residual/__init__.py:
// 248-250). Deferred anyway, it reaches the final norm as each rank's partial.
class DeferAtLastLayer : public DispatchPolicy {
 public:
  std::string_view name() const override { return "defer-at-last-layer"; }
  ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const override {
    ExitInputs mine = in;
    mine.terminal = false;
    return DispatchPolicy::PlanFfnExit(w, mine);
  }
};

// to_pp completes every owed sum before a stage's activations leave
// (residual/batch.py:269-291 @ 0.5.23; SGLang #28619 is the partial form,
// pp-flush-ep-only). Skipped, the next stage receives partial sums.
class PipelineFlushSkipped : public DispatchPolicy {
 public:
  std::string_view name() const override { return "pp-flush-skipped"; }
  std::vector<GroupRole> PipelineFlushReductions(const ParallelWidths&,
                                                 const ExitPlan&) const override {
    return {};
  }
};

// A dense MLP's sum is owed over TP (layer_boundary/factories.py:184-192 @
// 0.5.23), also under attention DP where its rows are the gathered batch.
// Reduced over attention TP, it misses the other attention-DP groups' parts.
class DenseMlpOverAttnTp : public DispatchPolicy {
 public:
  std::string_view name() const override { return "dense-mlp-over-attn-tp"; }
  GroupRole DenseMlpGroup() const override { return GroupRole::kAttnTp; }
};

// _select_dp_reduce_scatter (exit.py:76-95 @ 0.5.23) reduce-scatters the
// gathered batch only under MAX_LEN padding, where every group owns the same
// number of rows. Under SUM_LEN the groups' rows differ, so a reduce-scatter
// hands members unequal counts.
class ReduceScatterUnderSumLen : public DispatchPolicy {
 public:
  std::string_view name() const override { return "reduce-scatter-under-sum-len"; }
  ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const override {
    ExitInputs mine = in;
    mine.padding = DpPadding::kMaxLen;
    return DispatchPolicy::PlanFfnExit(w, mine);
  }
};

// Each attention-DP group's count is rounded up to a multiple of attention TP
// before the padding mode is chosen (model_executor/forward_batch_info.py:
// 1769-1772 @ 0.5.23), so that a group's rows split evenly over attention TP.
class DpTokensNotAligned : public DispatchPolicy {
 public:
  std::string_view name() const override { return "dp-tokens-not-aligned"; }
  DpBatchPlan PlanDpBatch(const DpBatch& gathered, int, int my_group,
                          const RankLocalState& local) const override {
    return DispatchPolicy::PlanDpBatch(gathered, 1, my_group, local);
  }
};

// The embedding output of a model wired for attention DP reduces over
// attention TP (vocab_parallel_embedding.py:166-185 @ 0.5.23, asked for by
// llama4.py:493 and glm4_moe.py:883, not by llama.py:432). Reduced over TP,
// it mixes attention-DP groups whose batches differ.
class EmbeddingOverTpUnderDp : public DispatchPolicy {
 public:
  std::string_view name() const override { return "embedding-over-tp-under-dp-attention"; }
  GroupRole EmbeddingGroup(const ParallelWidths&, bool) const override { return GroupRole::kTp; }
};

// The fused library's availability acted on per rank: SGLang 0.5.23 ORs the
// unavailable flag over TP (flashinfer_comm_fusion.py:713-741), so a rank
// whose library failed to load takes every peer off the fused path with it.
// init-failure-without-vote removes this vote and the workspace's; this
// mutant removes only this one.
class LibraryCheckUnvoted : public DispatchPolicy {
 public:
  std::string_view name() const override { return "library-check-unvoted"; }
  bool LibraryAvailable(bool local_ok, bool) const override { return local_ok; }
};

// vLLM #8404 and the fix PR #8558 (and on ROCm, vLLM #57059): the custom
// all-reduce's barrier flag written with a relaxed store, no fence before
// it. NVLink does not order a rank's stores: in v1 a peer can see the start
// flag before the staged input it announces, and reads the previous call's
// data (mismatch); in v2's 2shot_pull (whose second phase SGLang releases,
// arrive_rel_acq) a rank copies its workspace out before a peer's reduced
// shard lands there, and keeps its own contribution (wrong_peer, the class
// the default v2 gives). Caught only under relaxed memory (`memory:
// relaxed`), where the simulator lets stores land out of order; with
// immediate visibility every store is ordered and the bug hides, as it hides
// on most GPU runs.
inline constexpr char kCustomFlagWithoutRelease[] = "custom-flag-without-release";
using CustomFlagWithoutRelease = WithoutKernelFlag<kCustomFlagWithoutRelease, kReleaseFlags>;

template <typename Policy>
std::unique_ptr<DispatchPolicy> Make() {
  return std::make_unique<Policy>();
}

struct MutantEntry {
  MutantInfo info;
  std::unique_ptr<DispatchPolicy> (*make)();
};

const std::array<MutantEntry, 42>& Entries() {
  static const std::array<MutantEntry, 42> kEntries = {{
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
      {{"no-input-sanitising", "Lamport inputs pushed without rewriting -0 (the sentinel) to +0",
        "the Lamport sentinel (TensorRT-LLM and FlashInfer kernels sanitise inputs)",
        Verdict::kHang, "negative_zero_inputs"},
       &Make<NoInputSanitising>},
      {{"no-clear-readback", "the clear of the previous Lamport buffer not read back",
        "TensorRT-LLM #6237 (stale data when the previous call was larger)", Verdict::kWrongPeer,
        "uncleared_buffer"},
       &Make<NoClearReadback>},
      {{"fp32-acc-from-rank-env", "fp32 accumulation on the ranks whose environment asks for it",
        "SGLang PR #30700 review (fp32_acc must match on every rank)", Verdict::kDivergence,
        "fp32_acc_env"},
       &Make<Fp32AccFromRankEnv>},
      {{"local-predicates", "every predicate input read from rank-local raw state",
        "SGLang PR #30700 review (all checks must be rank-invariant)", Verdict::kHang,
        "the predicate-input faults"},
       &Make<LocalPredicates>},
      {{"tactic-from-local-timings", "the autotuner's tactic picked from the rank's own timings",
        "FlashInfer #3186, #3187; SGLang #23317 (tactics chosen per rank)", Verdict::kWrongPeer,
        "tuner_timing_skew"},
       &Make<TacticFromLocalTimings>},
      {{"warm-cache-skips-tuner", "a rank with a warm tuning cache skips the tuner's collectives",
        "FlashInfer RFC #3920; vLLM #54618", Verdict::kHang, "warm_tuner_cache"},
       &Make<WarmCacheSkipsTuner>},
      {{"spec-skip-from-local-length",
        "the speculative draft skipped from the rank's own count of the sequence length",
        "vLLM #40589, #49027 (a skip predicate not agreed)", Verdict::kMismatch, "seq_len_view"},
       &Make<SpecSkipFromLocalLength>},
      {{"abort-from-local-clock", "a request's timeout checked against the rank's own clock",
        "SGLang #27221 (time-based decisions from per-rank clocks)", Verdict::kHang, "clock_skew"},
       &Make<AbortFromLocalClock>},
      {{"defer-at-last-layer", "the last layer's sum deferred to the final norm",
        "SGLang 0.5.23 exit.py:150-175, residual/__init__.py:248-250 (no pending sum at the final "
        "norm)",
        Verdict::kWrongPeer, "any layout that defers (tp > 1, no hybrid EP+TP)"},
       &Make<DeferAtLastLayer>},
      {{"pp-flush-skipped", "the owed MoE sum not completed before a stage's activations leave",
        "SGLang 0.5.23 residual/batch.py:269-291; SGLang #28619 (its partial form)",
        Verdict::kWrongPeer, "pp > 1 with a MoE layer last in a stage"},
       &Make<PipelineFlushSkipped>},
      {{"dense-mlp-over-attn-tp", "a dense MLP's sum reduced over attention TP instead of TP",
        "SGLang 0.5.23 layer_boundary/factories.py:184-192", Verdict::kWrongPeer,
        "attention DP with dense layers"},
       &Make<DenseMlpOverAttnTp>},
      {{"reduce-scatter-under-sum-len",
        "the attention-DP exit reduce-scattered under SUM_LEN padding",
        "SGLang 0.5.23 exit.py:76-95 (_select_dp_reduce_scatter: MAX_LEN only)", Verdict::kMismatch,
        "attention DP with SUM_LEN padding"},
       &Make<ReduceScatterUnderSumLen>},
      {{"dp-tokens-not-aligned",
        "attention-DP counts not rounded up to attention TP before padding",
        "SGLang 0.5.23 forward_batch_info.py:1769-1772", Verdict::kMismatch,
        "attention DP, attention TP > 1, a count not a multiple of it"},
       &Make<DpTokensNotAligned>},
      {{"embedding-over-tp-under-dp-attention",
        "the embedding output reduced over TP under attention DP",
        "SGLang 0.5.23 vocab_parallel_embedding.py:166-185 (llama.py:432 does not ask for "
        "attention TP)",
        Verdict::kHang, "attention DP with unequal DP batches"},
       &Make<EmbeddingOverTpUnderDp>},
      {{"library-check-unvoted", "a rank whose fused library failed leaves the fused path alone",
        "SGLang 0.5.23 flashinfer_comm_fusion.py:713-741 (unavailable flag OR-synced over TP)",
        Verdict::kHang, "library_unavailable"},
       &Make<LibraryCheckUnvoted>},
      {{"clear-sized-by-current-call",
        "the previous Lamport buffer cleared for the current call's size",
        "TensorRT-LLM #6237 (nvbugs/5399355: stale data after a larger call)", Verdict::kMismatch,
        "token counts that shrink then grow (tp8-lamport-sizes-llama3-h200)"},
       &Make<ClearSizedByCurrentCall>},
      {{"sum-from-own-rank", "one-shot slots summed from the rank's own slot on",
        "rank-order summation of the Lamport one-shot (TensorRT-LLM, FlashInfer)",
        Verdict::kDivergence, "any fused one-shot call"},
       &Make<SumFromOwnRank>},
      {{"two-buffer-rotation", "two Lamport buffers rotated instead of three",
        "NUM_LAMPORT_BUFFERS = 3 of the MNNVL workspaces (TensorRT-LLM, FlashInfer)",
        Verdict::kHang, "a peer one call ahead"},
       &Make<TwoBufferRotation>},
      {{"unbounded-kernel-wait", "Lamport polls without a bound",
        "FlashInfer #3053, vLLM #35772 (a Lamport spin that never ends)", Verdict::kHang,
        "rank_killed"},
       &Make<UnboundedKernelWait>},
      {{"workspace-flag-from-local-view",
        "the workspace's initialised state read from the rank's own manager flag",
        "SGLang PR #30700 review (rank-invariant checks)", Verdict::kHang,
        "workspace_initialized_view"},
       &Make<WorkspaceFlagFromLocalView>},
      {{"dtype-from-local-cache", "the dtype check read from the rank's compile cache",
        "SGLang PR #30700 review (rank-invariant checks)", Verdict::kHang, "dtype_seen"},
       &Make<DtypeFromLocalCache>},
      {{"contiguity-from-local-view", "contiguity read from the rank's cached layout",
        "SGLang PR #30700 review (rank-invariant checks)", Verdict::kHang, "contiguity_view"},
       &Make<ContiguityFromLocalView>},
      {{"backend-flag-from-local-env", "the fused-backend flag read from the rank's environment",
        "SGLang PR #30700 review (rank-invariant checks)", Verdict::kHang, "backend_flag"},
       &Make<BackendFlagFromLocalEnv>},
      {{"tracing-from-local-state", "the fused path left by a rank inside torch.compile tracing",
        "SGLang PR #30700 review (rank-invariant checks)", Verdict::kHang, "tracing_state"},
       &Make<TracingFromLocalState>},
      {{"graph-capture-from-local-state",
        "the custom all-reduce skipped by a rank that believes it is capturing",
        "SGLang PR #30700 review; vLLM #39788 (per-rank custom all-reduce paths in capture)",
        Verdict::kHang, "graph_capture_state"},
       &Make<GraphCaptureFromLocalState>},
      {{"graph-replay-from-local-batch",
        "the CUDA graph replayed chosen from the rank's own DP group's batch",
        "SGLang 0.5.23 decode_cuda_graph_runner.py:871-872, 1624-1626 (the largest DP group's "
        "size, gathered)",
        Verdict::kHang, "attention DP with unequal batches and cuda_graph_tokens"},
       &Make<GraphReplayFromLocalBatch>},
      {{"lamport-counter-on-host",
        "the Lamport buffer index kept on the host, frozen into captured graphs",
        "ROCm/aiter #3928 (a host counter frozen into a CUDA graph); FlashInfer keeps it in "
        "the workspace's device flags",
        Verdict::kWrongPeer, "cuda_graph_tokens with the fused path and graphs of several sizes"},
       &Make<LamportCounterOnHost>},
      {{"graph-registration-unchecked",
        "captured custom all-reduce graph inputs registered by position, counts not compared",
        "vLLM #39788, PR #39791 (register_graph_buffers indexes peers' handles by the local "
        "count)",
        Verdict::kMismatch, "graph_input_unrecorded"},
       &Make<GraphRegistrationUnchecked>},
      {{"graph-registration-skipped-when-empty",
        "a rank that captured no custom all-reduce input skips the registration exchange",
        "SGLang 0.5.23 custom_all_reduce_v2.py:513-514 (_register_graph_inputs returns early)",
        Verdict::kHang, "graph_input_unrecorded on every captured input"},
       &Make<GraphRegistrationSkippedWhenEmpty>},
      {{"setup-failure-skips-exchange",
        "a rank whose workspace allocation failed skips the set-up's exchange",
        "SGLang 0.5.23 flashinfer_comm_fusion.py:329-393 (the preflight vote it skips); vLLM "
        "PR #53377",
        Verdict::kHang, "workspace_alloc_failure"},
       &Make<SetUpFailureSkipsExchange>},
      {{"custom-flag-without-release",
        "the custom all-reduce's barrier flag stored without a release fence",
        "vLLM #8404, PR #8558 (custom all-reduce flags without release/acquire); vLLM #57059",
        Verdict::kWrongPeer, "memory: relaxed"},
       &Make<CustomFlagWithoutRelease>},
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
