#include "faults/fault_kinds.h"

#include <algorithm>
#include <array>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/dtype.h"
#include "sim/memory/value.h"
#include "sim/replica/replica_config.h"
#include "sim/replica/site.h"
#include "sim/scenario/did_you_mean.h"

namespace lockstep::faults {
namespace {

// --- Where a kind applies. ---

bool Always(const Scenario&, const ParallelLayout&) { return true; }

bool HasFusedBackend(const Scenario& s, const ParallelLayout& l) { return FusedBackendOn(s, l); }

bool HasCustomAllReduce(const Scenario& s, const ParallelLayout& l) {
  return s.dispatch.custom_allreduce && l.widths().tp > 1;
}

// Custom all-reduce calls captured into CUDA graphs.
bool HasCustomGraphs(const Scenario& s, const ParallelLayout& l) {
  return HasCustomAllReduce(s, l) && !s.workload.cuda_graph_tokens.empty();
}

// A fused Lamport push or a custom all-reduce flag to drop.
bool HasPushOrFlag(const Scenario& s, const ParallelLayout& l) {
  return HasFusedBackend(s, l) || HasCustomAllReduce(s, l);
}

bool HasDpAttention(const Scenario& s, const ParallelLayout& l) {
  (void)s;
  return l.widths().DpAttention();
}

// The start-up autotuner runs (workload.autotune) over a TP group of two or
// more ranks with a fused backend.
bool HasAutotune(const Scenario& s, const ParallelLayout& l) {
  return s.workload.autotune && l.widths().tp > 1 && FusedBackendOn(s, l);
}

// A speculative draft step that a context limit can skip.
bool HasDraftSkip(const Scenario& s, const ParallelLayout&) {
  return s.workload.speculative && s.model.draft_projection.has_value() &&
         s.workload.max_model_len > 0;
}

// Time-based decisions a clock can change (a request timeout).
bool HasTimedDecisions(const Scenario& s, const ParallelLayout&) {
  return s.workload.abort_after_us > 0;
}

bool WorkspaceBindingHasOtherPeers(const Scenario& s, const ParallelLayout& l) {
  if (!FusedBackendOn(s, l)) return false;
  // The MoE workspace's group under SGLang 0.5.23 (the post-experts
  // reduction's) or under PR #30700 (the tagged MoE role): a scenario may
  // run either policy.
  const bool moe =
      s.model.moe && (EqualSizeOtherRole(l, PostExpertsReductionRole(l.widths())).has_value() ||
                      EqualSizeOtherRole(l, MoeTagRole(l.widths())).has_value());
  return moe || EqualSizeOtherRole(l, GroupRole::kAttnTp).has_value();
}

bool BothMoeGroupsDistinct(const Scenario& s, const ParallelLayout& l) {
  return FusedBackendOn(s, l) && s.model.moe && l.widths().IsHybridEpTp();
}

bool TpDiffersFromAttentionTp(const Scenario& s, const ParallelLayout& l) {
  return FusedBackendOn(s, l) && l.widths().attn_tp < l.widths().tp && l.widths().attn_tp > 1;
}

// --- Effects. ---

void TagBothMoeGroups(const ParallelLayout& layout, WorkspaceTags& tags) {
  tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeEp))] = WorkspaceKind::kMoe;
  tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeTp))] = WorkspaceKind::kMoe;
}

void TagTpGroup(const ParallelLayout& layout, WorkspaceTags& tags) {
  tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kTp))] = WorkspaceKind::kAttnTp;
}

// A binding to an equal-size group of other peers. Which workspace: the
// `workspace` parameter, else the MoE one when it has such a group, else the
// attention one.
template <uint32_t kGeneration>
bool BindToOtherPeers(const FaultSpec& f, const Scenario& s, const ParallelLayout& layout,
                      WorkspaceKind kind, GroupRole intended, WorkspaceBinding& binding) {
  std::string target;
  if (auto it = f.params.find("workspace"); it != f.params.end()) {
    target = it->second;
  } else {
    const bool moe =
        s.model.moe &&
        EqualSizeOtherRole(layout, PostExpertsReductionRole(layout.widths())).has_value();
    target = moe ? "moe" : "attn_tp";
  }
  if (target != WorkspaceKindName(kind)) return false;
  const std::optional<GroupRole> role = EqualSizeOtherRole(layout, intended);
  if (!role) return false;
  binding = WorkspaceBinding{*role, kGeneration};
  return true;
}

void WorkspaceInitializedView(const FaultSpec&, const Scenario&, RankLocalState& st) {
  st.workspace_initialized_view = false;
}
void CapacityView(const FaultSpec& f, const Scenario& s, RankLocalState& st) {
  int64_t smallest = s.workload.tokens.front();
  for (int64_t t : s.workload.tokens) smallest = std::min(smallest, t);
  st.max_tokens_view = ParamOr(f, "max_tokens", std::max<int64_t>(0, smallest - 1));
}
void DtypeSeen(const FaultSpec& f, const Scenario& s, RankLocalState& st) {
  auto it = f.params.find("dtype");
  absl::StatusOr<DType> d = it != f.params.end() ? ParseDType(it->second)
                            : s.dispatch.dtype == DType::kFp32
                                ? absl::StatusOr<DType>(DType::kBf16)
                                : absl::StatusOr<DType>(DType::kFp32);
  st.dtype_seen = d.ok() ? *d : DType::kFp32;
}
void TokenCountView(const FaultSpec& f, const Scenario&, RankLocalState& st) {
  st.token_count_skew = ParamOr(f, "delta", 1);
}
void ContiguityView(const FaultSpec&, const Scenario&, RankLocalState& st) {
  st.contiguous_view = false;
}
void BackendFlag(const FaultSpec&, const Scenario&, RankLocalState& st) {
  st.fused_backend_flag = false;
}
void LibraryUnavailable(const FaultSpec&, const Scenario&, RankLocalState& st) {
  st.library_loaded = false;
}
void TracingState(const FaultSpec&, const Scenario&, RankLocalState& st) { st.tracing = true; }
void GraphCaptureState(const FaultSpec&, const Scenario&, RankLocalState& st) {
  st.graph_capturing = true;
}
void SmCountDivergence(const FaultSpec& f, const Scenario&, RankLocalState& st) {
  st.sm_count = static_cast<int>(ParamOr(f, "sm_count", 66));
}
void Fp32AccEnv(const FaultSpec&, const Scenario&, RankLocalState& st) { st.fp32_acc_env = true; }
void TunerTimingSkew(const FaultSpec& f, const Scenario&, RankLocalState& st) {
  st.tuner_favoured = static_cast<int>(ParamOr(f, "favour", 0));
}
void WarmTunerCache(const FaultSpec& f, const Scenario&, RankLocalState& st) {
  st.tuner_cache_tactic = static_cast<int>(ParamOr(f, "tactic", 0));
}
void SeqLenView(const FaultSpec& f, const Scenario&, RankLocalState& st) {
  st.context_len_skew = ParamOr(f, "delta", 1);
}
void ClockSkew(const FaultSpec& f, const Scenario&, RankLocalState& st) {
  st.clock_skew_us = ParamOr(f, "skew_us", 1000);
}
void WorkspaceAllocFailure(const FaultSpec&, const Scenario&, RankLocalState& st) {
  st.workspace_allocated = false;
}

int64_t StragglerDelay(const FaultSpec& f) { return ParamOr(f, "delay_us", 200); }

absl::Status LaunchFailure(const FaultSpec&, int rank, int64_t call, int64_t) {
  return absl::InternalError(absl::StrFormat(
      "CUDA error: unspecified launch failure (all-reduce call %d on rank %d)", call, rank));
}
absl::Status IllegalAddress(const FaultSpec&, int rank, int64_t, int64_t first) {
  return absl::InternalError(absl::StrFormat(
      "CUDA error: an illegal memory access was encountered (sticky since call %d on rank %d)",
      first, rank));
}

bool LostWrite(const FaultSpec& f, uint64_t epoch) {
  return static_cast<int64_t>(epoch) >= ParamOr(f, "epoch", 2);
}
int LateWrite(const FaultSpec& f) { return static_cast<int>(ParamOr(f, "steps", 25)); }
bool UnclearedBuffer(const FaultSpec& f, uint64_t epoch) {
  return static_cast<int64_t>(epoch) == ParamOr(f, "epoch", 2);
}

// --- Swarm draws (each in the order its rng calls were first written). ---

void DrawNothing(const Scenario&, int64_t, Rng&, FaultSpec&) {}
void DrawAtCall(const Scenario&, int64_t calls, Rng& rng, FaultSpec& f) {
  f.at_call = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(calls)));
}
void DrawMaybeAtStep(const Scenario& s, Rng& rng, FaultSpec& f) {
  if (rng.Chance(1, 2)) {
    f.at_step = static_cast<int64_t>(rng.Below(static_cast<uint64_t>(s.workload.steps)));
  }
}
void DrawStepped(const Scenario& s, int64_t, Rng& rng, FaultSpec& f) { DrawMaybeAtStep(s, rng, f); }
void DrawCapacity(const Scenario& s, int64_t, Rng& rng, FaultSpec& f) {
  f.params["max_tokens"] =
      absl::StrCat(rng.Below(static_cast<uint64_t>(s.dispatch.max_tokens) + 1));
  DrawMaybeAtStep(s, rng, f);
}
void DrawDelta(const Scenario&, int64_t, Rng& rng, FaultSpec& f) {
  f.params["delta"] = absl::StrCat(1 + rng.Below(8));
}
void DrawSmCount(const Scenario&, int64_t, Rng& rng, FaultSpec& f) {
  f.params["sm_count"] = absl::StrCat(8 + rng.Below(256));
}
void DrawDelay(const Scenario&, int64_t, Rng& rng, FaultSpec& f) {
  f.params["delay_us"] = absl::StrCat(1 + rng.Below(500));
}
void DrawLateSteps(const Scenario&, int64_t, Rng& rng, FaultSpec& f) {
  f.params["steps"] = absl::StrCat(1 + rng.Below(100));
}
void DrawTunerCandidate(const Scenario&, int64_t, Rng& rng, FaultSpec& f, const char* param) {
  // A candidate other than the built-in one: 0 or 2.
  f.params[param] = absl::StrCat(rng.Chance(1, 2) ? 0 : 2);
}
void DrawFavour(const Scenario& s, int64_t calls, Rng& rng, FaultSpec& f) {
  DrawTunerCandidate(s, calls, rng, f, "favour");
}
void DrawCachedTactic(const Scenario& s, int64_t calls, Rng& rng, FaultSpec& f) {
  DrawTunerCandidate(s, calls, rng, f, "tactic");
}
void DrawClockSkew(const Scenario& s, int64_t, Rng& rng, FaultSpec& f) {
  // Up to twice the deadline: sometimes past it from the first step.
  const uint64_t range = static_cast<uint64_t>(std::max<int64_t>(1, 2 * s.workload.abort_after_us));
  f.params["skew_us"] = absl::StrCat(1 + rng.Below(range));
  DrawMaybeAtStep(s, rng, f);
}
int64_t UnrecordedGraphInputs(const FaultSpec& f) { return ParamOr(f, "count", 1); }

void DrawCount(const Scenario&, int64_t, Rng& rng, FaultSpec& f) {
  f.params["count"] = absl::StrCat(1 + rng.Below(4));
}

void DrawEpoch(const Scenario&, int64_t calls, Rng& rng, FaultSpec& f) {
  f.params["epoch"] = absl::StrCat(2 + rng.Below(static_cast<uint64_t>(calls)));
}

using K = FaultKey;
constexpr FaultParam kWorkspaceParam{"workspace",
                                     "moe or attn_tp (default: moe where it has an equal-size "
                                     "group of other peers, else attn_tp)"};
constexpr FaultParam kEpochParam{"epoch", "the workspace call it strikes, 1-based (default 2)"};
constexpr FaultParam kRowParam{"row",
                               "the first row (token) of the call's input it lands in, 0-based "
                               "(default: the whole input; a row past the call's rows injects "
                               "nothing)",
                               int64_t{1} << 30};
constexpr FaultParam kRowsParam{"rows", "how many rows from `row` (default 1)", int64_t{1} << 30};
constexpr FaultParam kCountParam{"count",
                                 "how many captured inputs, from the first, go unrecorded "
                                 "(default 1)",
                                 int64_t{1} << 20};

const std::vector<FaultKindInfo>& Table() {
  static const std::vector<FaultKindInfo> kTable = {
      // --- Rank-divergent predicate inputs: raw local state. ---
      {"workspace_initialized_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's own workspace-manager flag says uninitialised",
       "the reference reads the initialised state voted at rendezvous",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {},
       true,
       &HasFusedBackend,
       &DrawNothing,
       {.local = &WorkspaceInitializedView}},
      {"capacity_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's autotuner/allocator sees another max-tokens capacity (SGLang #23317)",
       "the reference checks capacity against the workspace's agreed capacity",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {{"max_tokens", "the capacity the rank sees (default: the smallest token count - 1)"}},
       true,
       &HasFusedBackend,
       &DrawCapacity,
       {.local = &CapacityView}},
      {"dtype_seen",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's compile cache last saw another dtype",
       "the reference compares the call's dtype with the workspace's",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {{"dtype", "bf16, fp16 or fp32 (default: another than the scenario's)"}},
       true,
       &HasFusedBackend,
       &DrawStepped,
       {.local = &DtypeSeen}},
      {"token_count_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's local token count differs from the one it padded to (DP attention)",
       "the reference pads to the all-gathered maximum",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {{"delta", "tokens added to the rank's local count (default 1)"}},
       true,
       &HasDpAttention,
       &DrawDelta,
       {.local = &TokenCountView}},
      {"contiguity_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's cached contiguity of the activation says non-contiguous",
       "the reference reads the call's own tensor layout",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {},
       true,
       &Always,
       &DrawStepped,
       {.local = &ContiguityView}},
      {"backend_flag",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the fused-backend flag reads false in the rank's environment",
       "the reference follows the server arguments, which every rank shares",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {},
       true,
       &HasFusedBackend,
       &DrawNothing,
       {.local = &BackendFlag}},
      {"library_unavailable",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the fused-kernel library failed to import on the rank",
       "availability is voted: the fused path is off on every rank alike",
       FaultStage::kInit,
       {},
       {},
       true,
       &HasFusedBackend,
       &DrawNothing,
       {.local = &LibraryUnavailable}},
      {"tracing_state",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank is inside torch.compile tracing while its peers are not",
       "the reference decides the same whether tracing or not",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {},
       true,
       &Always,
       &DrawStepped,
       {.local = &TracingState}},
      {"graph_capture_state",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank is capturing a CUDA graph while its peers are not",
       "the reference decides the same whether capturing or not",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {},
       true,
       &Always,
       &DrawStepped,
       {.local = &GraphCaptureState}},
      // --- Group bindings. ---
      {"workspace_bound_to_other_peers",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "a workspace (`workspace`: moe or attn_tp) rendezvous on an equal-size group with other "
       "peers",
       "the exact peer-set check refuses the workspace on every rank alike",
       FaultStage::kSetUp,
       {},
       {kWorkspaceParam},
       true,
       &WorkspaceBindingHasOtherPeers,
       &DrawNothing,
       {.bind = &BindToOtherPeers<0>}},
      {"stale_workspace_binding",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "a workspace was re-initialised on an equal-size group with other peers",
       "the exact peer-set check compares the current binding and refuses it on every rank",
       FaultStage::kSetUp,
       {},
       {kWorkspaceParam},
       true,
       &WorkspaceBindingHasOtherPeers,
       &DrawNothing,
       {.bind = &BindToOtherPeers<1>}},
      {"both_moe_groups_tagged",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "the MoE-TP group is tagged with the EP-bound MoE workspace too",
       "the exact peer-set check refuses it for MoE-TP calls on every rank",
       FaultStage::kSetUp,
       {},
       {},
       true,
       &BothMoeGroupsDistinct,
       &DrawNothing,
       {.tags = &TagBothMoeGroups}},
      {"tp_group_tagged",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "the full TP group is tagged with the attention-TP workspace under DP attention",
       "the workspace's world size and peers differ from TP's on every rank",
       FaultStage::kSetUp,
       {},
       {},
       true,
       &TpDiffersFromAttentionTp,
       &DrawNothing,
       {.tags = &TagTpGroup}},
      // --- Kernel and hardware errors. ---
      {"kernel_launch_failure",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "the rank's all-reduce kernel fails to launch at one call",
       "the error propagates and the launcher stops the job; nothing falls back",
       FaultStage::kCall,
       {K::kAtCall, K::kAtStep, K::kAtLayer, K::kAtSite, K::kAtPhase},
       {},
       true,
       &Always,
       &DrawAtCall,
       {.error = &LaunchFailure}},
      {"illegal_address",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "a sticky illegal-address error: every later kernel on the rank fails",
       "the first failing call raises; nothing falls back",
       FaultStage::kCall,
       {K::kAtCall, K::kAtStep, K::kAtLayer, K::kAtSite, K::kAtPhase},
       {},
       true,
       &Always,
       &DrawAtCall,
       {.error = &IllegalAddress, .sticky = true}},
      {"rank_killed",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "the rank's process dies before one call and never arrives",
       "its peers' bounded waits and the NCCL watchdog fire, naming it",
       FaultStage::kCall,
       {K::kAtCall, K::kAtStep, K::kAtLayer, K::kAtSite, K::kAtPhase},
       {},
       true,
       &Always,
       &DrawAtCall,
       {.kills = true}},
      {"straggler",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank runs late by `delay_us` each step (or at `at_step` only) and yields more often",
       "every wait tolerates lateness within its budget; past a peer's bounded wait or the "
       "watchdog, the call ends there (fail_stop, FaultOutcome)",
       FaultStage::kStep,
       {K::kAtStep},
       {{"delay_us", "µs added to the rank's step (default 200)"}},
       true,
       &Always,
       &DrawDelay,
       {.delay_us = &StragglerDelay}},
      {"lost_write",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "one Lamport push (or custom all-reduce flag) from the rank never lands",
       "the reader's bounded wait fires, naming the writer",
       FaultStage::kMemory,
       {},
       {kEpochParam},
       false,
       &HasPushOrFlag,
       &DrawEpoch,
       {.drops_push = &LostWrite}},
      {"late_write",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank's pushes land `steps` scheduling steps late",
       "Lamport polls wait for the data, however late",
       FaultStage::kMemory,
       {},
       {{"steps", "scheduling steps each push lands late (default 25)"}},
       false,
       &HasFusedBackend,
       &DrawLateSteps,
       {.delays_push = &LateWrite}},
      {"uncleared_buffer",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "the clear of the previous Lamport buffer does not take on the rank",
       "the reference kernel reads the cleared range back and raises instead of reading stale data",
       FaultStage::kMemory,
       {},
       {kEpochParam},
       false,
       &HasFusedBackend,
       &DrawEpoch,
       {.drops_clear = &UnclearedBuffer}},
      {"graph_input_unrecorded",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "with workload.cuda_graph_tokens, the rank's first `count` captured custom all-reduce "
       "inputs are never recorded for registration (an allocator cache hit skipped the "
       "record: ROCm/aiter #2638)",
       "registration compares every member's count of captured inputs and raises on a "
       "difference (vLLM PR #39791) instead of pairing other calls' buffers",
       FaultStage::kMemory,
       {},
       {kCountParam},
       false,
       &HasCustomGraphs,
       &DrawCount,
       {.unrecorded_graph_inputs = &UnrecordedGraphInputs}},
      {"negative_zero_inputs",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank's inputs contain −0, the Lamport sentinel",
       "inputs are sanitised to +0 before they are pushed",
       FaultStage::kInput,
       {K::kAtCall, K::kAtStep, K::kAtLayer, K::kAtSite, K::kAtPhase},
       {kRowParam, kRowsParam},
       false,
       &HasFusedBackend,
       &DrawAtCall,
       {.input_flags = kHasNegZero}},
      {"negative_subnormal_inputs",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank's inputs contain a negative subnormal and the kernels run with flush-to-zero",
       "the sentinel test compares exact bits, so a subnormal is data",
       FaultStage::kInput,
       {K::kAtCall, K::kAtStep, K::kAtLayer, K::kAtSite, K::kAtPhase},
       {kRowParam, kRowsParam},
       false,
       &HasFusedBackend,
       &DrawAtCall,
       {.input_flags = kHasNegSubnormal, .forces_ftz = true}},
      {"sm_count_divergence",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's device reports another SM count (vLLM #43616)",
       "grids are sized from the message size only",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {{"sm_count", "the SM count the rank's device reports (default 66)"}},
       true,
       &HasCustomAllReduce,
       &DrawSmCount,
       {.local = &SmCountDivergence}},
      {"fp32_acc_env",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "an environment override asks the rank for fp32 accumulation",
       "the accumulation type is fixed by the decision, the same on every rank",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {},
       true,
       &HasFusedBackend,
       &DrawNothing,
       {.local = &Fp32AccEnv}},
      {"tuner_timing_skew",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's own autotuner timings favour another tactic (FlashInfer #3186/#3187)",
       "the tactic is chosen from every member's timings, the same on every rank",
       FaultStage::kInit,
       {},
       {{"favour", "the candidate (0, 1 or 2) the rank's timings make fastest (default 0)", 2}},
       true,
       &HasAutotune,
       &DrawFavour,
       {.local = &TunerTimingSkew}},
      {"warm_tuner_cache",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's autotuner cache is warm from an earlier run (FlashInfer RFC #3920)",
       "whether to tune is agreed by the tuner's handshake: the warm rank tunes with its peers",
       FaultStage::kInit,
       {},
       {{"tactic", "the candidate (0, 1 or 2) the rank's cache holds (default 0)", 2}},
       true,
       &HasAutotune,
       &DrawCachedTactic,
       {.local = &WarmTunerCache}},
      {"seq_len_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's own count of a sequence's length is off the scheduler's (vLLM #40589)",
       "the speculative skip reads the scheduler's length, the same on every rank",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {{"delta", "tokens added to the rank's own count (default 1)"}},
       true,
       &HasDraftSkip,
       &DrawDelta,
       {.local = &SeqLenView}},
      {"clock_skew",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's clock reads ahead of its peers' (SGLang #27221)",
       "time-based decisions read the scheduler's clock, broadcast with the batch",
       FaultStage::kLocalState,
       {K::kAtStep, K::kAtPhase},
       {{"skew_us", "µs the rank's clock reads ahead (default 1000)", int64_t{3600} * 1000 * 1000}},
       true,
       &HasTimedDecisions,
       &DrawClockSkew,
       {.local = &ClockSkew}},
      // --- Initialisation. ---
      {"workspace_alloc_failure",
       FaultCategory::kInit,
       Verdict::kClean,
       "the rank fails to allocate its fusion workspace",
       "the failure is voted across the group: every rank falls back alike",
       FaultStage::kInit,
       {},
       {},
       true,
       &HasFusedBackend,
       &DrawNothing,
       {.local = &WorkspaceAllocFailure}},
  };
  return kTable;
}

std::string JoinNames(const std::vector<std::string_view>& names) {
  return absl::StrJoin(names, ", ", [](std::string* out, std::string_view v) { out->append(v); });
}

// The layers the run's model has (every pipeline stage together).
int64_t RunLayers(const Scenario& s) {
  return s.workload.layers > 0 ? s.workload.layers : s.model.layers;
}

}  // namespace

std::string_view FaultCategoryName(FaultCategory category) {
  switch (category) {
    case FaultCategory::kPredicateInput:
      return "predicate input";
    case FaultCategory::kGroupBinding:
      return "group binding";
    case FaultCategory::kKernel:
      return "kernel";
    case FaultCategory::kInit:
      return "init";
  }
  return "?";
}

std::string_view FaultStageName(FaultStage stage) {
  switch (stage) {
    case FaultStage::kSetUp:
      return "set-up";
    case FaultStage::kInit:
      return "init";
    case FaultStage::kLocalState:
      return "local state";
    case FaultStage::kStep:
      return "step";
    case FaultStage::kCall:
      return "call";
    case FaultStage::kInput:
      return "input";
    case FaultStage::kMemory:
      return "memory";
  }
  return "?";
}

std::string_view FaultKeyName(FaultKey key) {
  switch (key) {
    case FaultKey::kAtCall:
      return "at_call";
    case FaultKey::kAtStep:
      return "at_step";
    case FaultKey::kAtLayer:
      return "at_layer";
    case FaultKey::kAtSite:
      return "at_site";
    case FaultKey::kAtPhase:
      return "at_phase";
  }
  return "?";
}

bool PlacedBySite(const FaultSpec& f) {
  return f.at_layer >= 0 || !f.at_site.empty() || !f.at_phase.empty();
}

bool AtPlacedSite(const FaultSpec& f, const CallPlace& p) {
  return (f.at_step < 0 || p.site.step == f.at_step) &&
         (f.at_layer < 0 || p.site.layer == f.at_layer) &&
         (f.at_site.empty() || SiteKindName(p.site.kind) == f.at_site) &&
         (f.at_phase.empty() || CallPhaseName(p.site.phase) == f.at_phase);
}

bool PlacedAt(const FaultSpec& f, const CallPlace& p, int64_t first) {
  if (PlacedBySite(f)) return first >= 0 ? p.call == first : AtPlacedSite(f, p);
  if (f.at_step >= 0) {
    return p.step == f.at_step && p.call_in_step == std::max<int64_t>(0, f.at_call);
  }
  return f.at_call < 0 || p.call == f.at_call;
}

bool PlacedAtOrAfter(const FaultSpec& f, const CallPlace& p, int64_t first) {
  if (PlacedBySite(f)) return first >= 0 ? p.call >= first : AtPlacedSite(f, p);
  if (f.at_step >= 0) {
    return p.step > f.at_step ||
           (p.step == f.at_step && p.call_in_step >= std::max<int64_t>(0, f.at_call));
  }
  return f.at_call < 0 || p.call >= f.at_call;
}

bool FaultKindInfo::Honours(FaultKey key) const {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

std::span<const FaultKindInfo> AllFaultKinds() { return Table(); }

const FaultKindInfo* FindFaultKind(std::string_view name) {
  for (const FaultKindInfo& k : Table()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

Verdict FaultOutcome(const FaultSpec& f, const Scenario& scenario) {
  const FaultKindInfo* kind = FindFaultKind(f.kind);
  if (kind == nullptr) return Verdict::kClean;
  if (kind->effect.delay_us != nullptr) {
    const double budget_us =
        std::min(scenario.timeouts.kernel_wait_ms, scenario.timeouts.watchdog_ms) * 1e3;
    if (static_cast<double>(kind->effect.delay_us(f)) >= budget_us / 2) return Verdict::kFailStop;
  }
  return kind->outcome;
}

std::string GpuInjectableKindsText() {
  std::vector<std::string_view> names;
  for (const FaultKindInfo& k : Table()) {
    if (k.gpu_injectable) names.push_back(k.name);
  }
  return JoinNames(names);
}

int64_t ParamOr(const FaultSpec& f, std::string_view name, int64_t fallback) {
  auto it = f.params.find(std::string(name));
  int64_t v = fallback;
  if (it != f.params.end() && absl::SimpleAtoi(it->second, &v)) return v;
  return fallback;
}

FaultSpec WithDefaults(FaultSpec f, const ParallelLayout& layout) {
  constexpr int64_t kDefaultCall = 3;
  if (f.ranks.empty()) f.ranks.push_back(layout.world_size() > 1 ? 1 : 0);
  const FaultKindInfo* kind = FindFaultKind(f.kind);
  if (kind != nullptr && kind->stage == FaultStage::kCall && f.at_call < 0 && f.at_step < 0 &&
      !PlacedBySite(f)) {
    f.at_call = kDefaultCall;
  }
  return f;
}

std::optional<GroupRole> EqualSizeOtherRole(const ParallelLayout& layout, GroupRole role) {
  const int width = layout.GroupSize(layout.Object(role).members.front());
  if (width <= 1) return std::nullopt;
  for (GroupRole other : {GroupRole::kMoeTp, GroupRole::kMoeEp, GroupRole::kAttnTp, GroupRole::kTp,
                          GroupRole::kPp, GroupRole::kAttnCp, GroupRole::kMoeDp}) {
    if (other == role) continue;
    const GroupObject& o = layout.Object(other);
    if (layout.GroupSize(o.members.front()) != width) continue;
    // Other peers: rank 0's groups differ.
    if (layout.GroupOf(other, 0) != layout.GroupOf(role, 0)) return other;
  }
  return std::nullopt;
}

absl::Status ValidateFault(const Scenario& s, const ParallelLayout& layout, const FaultSpec& f) {
  const std::string where =
      absl::StrFormat("%s:%d: faults", s.path.empty() ? s.name : s.path, f.line);
  const FaultKindInfo* kind = FindFaultKind(f.kind);
  if (kind == nullptr) {
    std::vector<std::string_view> names;
    for (const FaultKindInfo& k : Table()) names.push_back(k.name);
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: unknown fault kind '%s'%s (lockstep faults lists them)", where, f.kind,
                        DidYouMean(f.kind, names)));
  }
  std::vector<std::string_view> accepted = {"ranks"};
  for (FaultKey k : kind->keys) accepted.push_back(FaultKeyName(k));
  for (const FaultParam& p : kind->params) accepted.push_back(p.name);
  const std::string honoured = absl::StrFormat("it takes: %s", JoinNames(accepted));
  for (const auto& [key, given] :
       {std::pair{FaultKey::kAtCall, f.at_call >= 0}, std::pair{FaultKey::kAtStep, f.at_step >= 0},
        std::pair{FaultKey::kAtLayer, f.at_layer >= 0},
        std::pair{FaultKey::kAtSite, !f.at_site.empty()},
        std::pair{FaultKey::kAtPhase, !f.at_phase.empty()}}) {
    if (given && !kind->Honours(key)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s: fault '%s' does not honour this key (%s; stage: %s)", where,
                          FaultKeyName(key), f.kind, honoured, FaultStageName(kind->stage)));
    }
  }
  if (f.at_step >= s.workload.steps) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: at_step: fault '%s' is placed at step %d but the run has %d step(s) (0-based): it "
        "would never fire; lower at_step or raise workload.steps",
        where, f.kind, f.at_step, s.workload.steps));
  }
  if (!f.at_site.empty() && !SiteKindFromName(f.at_site).has_value()) {
    std::vector<std::string_view> sites;
    for (int k = 0; k < kNumSiteKinds; ++k) sites.push_back(SiteKindName(static_cast<SiteKind>(k)));
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: at_site: fault '%s' names no call site '%s'%s (sites: %s)", where,
                        f.kind, f.at_site, DidYouMean(f.at_site, sites), JoinNames(sites)));
  }
  if (f.at_layer >= RunLayers(s)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: at_layer: fault '%s' is placed at layer %d but the model runs %d layer(s) (0-based): "
        "it would never fire; lower at_layer or raise workload.layers",
        where, f.kind, f.at_layer, RunLayers(s)));
  }
  if (f.at_call >= 0 && PlacedBySite(f)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: at_call: fault '%s' is placed by %s too: a fault placed at a layer, site or phase "
        "strikes the first call there (at_step picks the step); drop at_call or the others",
        where, f.kind,
        f.at_layer >= 0      ? "at_layer"
        : !f.at_site.empty() ? "at_site"
                             : "at_phase"));
  }
  if (!f.at_phase.empty()) {
    const std::optional<CallPhase> phase = CallPhaseFromName(f.at_phase);
    if (!phase) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: at_phase: fault '%s' names no phase '%s' (phases: eager, capture, replay)", where,
          f.kind, f.at_phase));
    }
    if (*phase != CallPhase::kEager && s.workload.cuda_graph_tokens.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: at_phase: fault '%s' is placed at %s but the run captures no CUDA graph: set "
          "workload.cuda_graph_tokens or drop at_phase",
          where, f.kind, f.at_phase));
    }
    if (kind->stage == FaultStage::kLocalState) {
      if (*phase != CallPhase::kCapture || f.at_step >= 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: at_phase: fault '%s' changes the rank's local state from at_step on; only "
            "at_phase: capture (without at_step) confines it, to the rank's graph captures",
            where, f.kind));
      }
    } else if (*phase == CallPhase::kCapture) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: at_phase: fault '%s' acts on a call as it runs, and nothing runs while a graph is "
          "captured: place it at eager or replay",
          where, f.kind));
    }
  }
  std::vector<std::string_view> param_names;
  for (const FaultParam& p : kind->params) param_names.push_back(p.name);
  for (const auto& [key, value] : f.params) {
    if (std::find(param_names.begin(), param_names.end(), key) == param_names.end()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: %s: fault '%s' has no parameter '%s'%s", where, key, f.kind, key,
                          absl::StrFormat(" (%s)", honoured)));
    }
    int64_t number = 0;
    if (key == "workspace") {
      if (value != "moe" && value != "attn_tp") {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: fault '%s' parameter workspace must be moe or attn_tp, got '%s'",
                            where, f.kind, value));
      }
      continue;
    }
    if (key == "dtype") {
      if (!ParseDType(value).ok()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: fault '%s' parameter dtype must be bf16, fp16 or fp32, got '%s'",
                            where, f.kind, value));
      }
      continue;
    }
    if (!absl::SimpleAtoi(value, &number)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: fault '%s' parameter '%s' expects an integer, got '%s'", where, f.kind, key, value));
    }
    // Every numeric parameter is a count, a size or a duration: never
    // negative, and bounded so that a typo cannot stall a run for hours.
    // (A loop, not a lambda: clang 14 cannot capture the structured binding.)
    int64_t declared_max = 0;
    for (const FaultParam& p : kind->params) {
      if (p.name == key) declared_max = p.max;
    }
    const int64_t limit = declared_max > 0    ? declared_max
                          : key == "delay_us" ? int64_t{60'000'000}
                                              : int64_t{1} << 40;
    if (number < 0 || number > limit) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: fault '%s' parameter '%s' must be between 0 and %d, got %d", where,
                          f.kind, key, limit, number));
    }
  }
  if (f.params.count("rows") != 0 && f.params.count("row") == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: rows: fault '%s' places its rows from `row`, which is missing: add row (the first "
        "row, 0-based)",
        where, f.kind));
  }
  if (f.params.count("rows") != 0 && ParamOr(f, "rows", 1) < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: rows: fault '%s' must strike at least one row", where, f.kind));
  }
  for (int r : f.ranks) {
    if (r < 0 || r >= layout.world_size()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: rank %d is outside the world of %d ranks", where, r, layout.world_size()));
    }
  }
  if (!kind->applies(s, layout)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: fault '%s' does not apply to this scenario (%s)", where, f.kind, kind->summary));
  }
  return absl::OkStatus();
}

}  // namespace lockstep::faults
