#include "faults/fault_kinds.h"

#include <algorithm>
#include <array>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/dtype.h"
#include "dispatch/workspace.h"
#include "sim/scenario/did_you_mean.h"

namespace lockstep::faults {
namespace {

bool Always(const Scenario&, const ParallelLayout&) { return true; }

bool HasFusedBackend(const Scenario& s, const ParallelLayout&) { return s.dispatch.fused_backend; }

bool HasCustomAllReduce(const Scenario& s, const ParallelLayout& l) {
  return s.dispatch.custom_allreduce && l.widths().tp > 1;
}

bool HasDpAttention(const Scenario& s, const ParallelLayout& l) {
  return s.parallel.dp_attention && l.widths().attn_dp > 1;
}

bool WorkspaceBindingHasOtherPeers(const Scenario& s, const ParallelLayout& l) {
  if (!s.dispatch.fused_backend) return false;
  const bool moe = s.model.moe && EqualSizeOtherRole(l, MoeWorkspaceRole(l.widths())).has_value();
  return moe || EqualSizeOtherRole(l, GroupRole::kAttnTp).has_value();
}

bool BothMoeGroupsDistinct(const Scenario& s, const ParallelLayout& l) {
  return s.dispatch.fused_backend && s.model.moe && l.widths().IsHybridEpTp();
}

bool TpDiffersFromAttentionTp(const Scenario& s, const ParallelLayout& l) {
  return s.dispatch.fused_backend && l.widths().attn_tp < l.widths().tp && l.widths().attn_tp > 1;
}

const std::array<FaultKindInfo, 25>& Table() {
  static const std::array<FaultKindInfo, 25> kTable = {{
      // --- Rank-divergent predicate inputs: raw local state. ---
      {"workspace_initialized_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's own workspace-manager flag says uninitialised",
       "the reference reads the initialised state voted at rendezvous",
       {},
       &HasFusedBackend},
      {"capacity_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's autotuner/allocator sees another max-tokens capacity (SGLang #23317)",
       "the reference checks capacity against the workspace's agreed capacity",
       {"max_tokens"},
       &HasFusedBackend},
      {"dtype_seen",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's compile cache last saw another dtype",
       "the reference compares the call's dtype with the workspace's",
       {"dtype"},
       &HasFusedBackend},
      {"token_count_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's local token count differs from the one it padded to (DP attention)",
       "the reference pads to the all-gathered maximum",
       {"delta"},
       &HasDpAttention},
      {"contiguity_view",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's cached contiguity of the activation says non-contiguous",
       "the reference reads the call's own tensor layout",
       {},
       &Always},
      {"backend_flag",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the fused-backend flag reads false in the rank's environment",
       "the reference follows the server arguments, which every rank shares",
       {},
       &HasFusedBackend},
      {"library_unavailable",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the fused-kernel library failed to import on the rank",
       "availability is voted: the fused path is off on every rank alike",
       {},
       &HasFusedBackend},
      {"tracing_state",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank is inside torch.compile tracing while its peers are not",
       "the reference decides the same whether tracing or not",
       {},
       &Always},
      {"graph_capture_state",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank is capturing a CUDA graph while its peers are not",
       "the reference decides the same whether capturing or not",
       {},
       &Always},
      // --- Group bindings. ---
      {"workspace_bound_to_other_peers",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "a workspace (`workspace`: moe or attn_tp) rendezvous on an equal-size group with other "
       "peers",
       "the exact peer-set check refuses the workspace on every rank alike",
       {"workspace"},
       &WorkspaceBindingHasOtherPeers},
      {"stale_workspace_binding",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "a workspace was re-initialised on an equal-size group with other peers",
       "the exact peer-set check compares the current binding and refuses it on every rank",
       {"workspace"},
       &WorkspaceBindingHasOtherPeers},
      {"both_moe_groups_tagged",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "the MoE-TP group is tagged with the EP-bound MoE workspace too",
       "the exact peer-set check refuses it for MoE-TP calls on every rank",
       {},
       &BothMoeGroupsDistinct},
      {"tp_group_tagged",
       FaultCategory::kGroupBinding,
       Verdict::kClean,
       "the full TP group is tagged with the attention-TP workspace under DP attention",
       "the workspace's world size and peers differ from TP's on every rank",
       {},
       &TpDiffersFromAttentionTp},
      // --- Kernel and hardware errors. ---
      {"kernel_launch_failure",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "the rank's all-reduce kernel fails to launch at one call",
       "the error propagates and the launcher stops the job; nothing falls back",
       {},
       &Always},
      {"illegal_address",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "a sticky illegal-address error: every later kernel on the rank fails",
       "the first failing call raises; nothing falls back",
       {},
       &Always},
      {"rank_killed",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "the rank's process dies before one call and never arrives",
       "its peers' bounded waits and the NCCL watchdog fire, naming it",
       {},
       &Always},
      {"straggler",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank runs late by `delay_us` each step and yields more often",
       "every wait tolerates lateness; only the timeline moves",
       {"delay_us"},
       &Always},
      {"lost_write",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "one Lamport push (or custom all-reduce flag) from the rank never lands",
       "the reader's bounded wait fires, naming the writer",
       {"epoch"},
       &HasFusedBackend},
      {"late_write",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank's pushes land `steps` scheduling steps late",
       "Lamport polls wait for the data, however late",
       {"steps"},
       &HasFusedBackend},
      {"uncleared_buffer",
       FaultCategory::kKernel,
       Verdict::kFailStop,
       "the clear of the previous Lamport buffer does not take on the rank",
       "the reference kernel reads the cleared range back and raises instead of reading stale data",
       {"epoch"},
       &HasFusedBackend},
      {"negative_zero_inputs",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank's inputs contain −0, the Lamport sentinel",
       "inputs are sanitised to +0 before they are pushed",
       {},
       &HasFusedBackend},
      {"negative_subnormal_inputs",
       FaultCategory::kKernel,
       Verdict::kClean,
       "the rank's inputs contain a negative subnormal and the kernels run with flush-to-zero",
       "the sentinel test compares exact bits, so a subnormal is data",
       {},
       &HasFusedBackend},
      {"sm_count_divergence",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "the rank's device reports another SM count (vLLM #43616)",
       "grids are sized from the message size only",
       {"sm_count"},
       &HasCustomAllReduce},
      {"fp32_acc_env",
       FaultCategory::kPredicateInput,
       Verdict::kClean,
       "an environment override asks the rank for fp32 accumulation",
       "the accumulation type is fixed by the decision, the same on every rank",
       {},
       &HasFusedBackend},
      // --- Initialisation. ---
      {"workspace_alloc_failure",
       FaultCategory::kInit,
       Verdict::kClean,
       "the rank fails to allocate its fusion workspace",
       "the failure is voted across the group: every rank falls back alike",
       {},
       &HasFusedBackend},
  }};
  return kTable;
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

std::span<const FaultKindInfo> AllFaultKinds() { return Table(); }

const FaultKindInfo* FindFaultKind(std::string_view name) {
  for (const FaultKindInfo& k : Table()) {
    if (k.name == name) return &k;
  }
  return nullptr;
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
  for (const auto& [key, value] : f.params) {
    if (std::find(kind->params.begin(), kind->params.end(), key) == kind->params.end()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: fault '%s' has no parameter '%s'%s", where, f.kind, key,
          kind->params.empty()
              ? std::string(" (it takes none besides ranks, at_call, at_step)")
              : absl::StrFormat(" (it takes: %s)",
                                absl::StrJoin(kind->params, ", ",
                                              [](std::string* out, auto v) { out->append(v); }))));
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
    const int64_t limit = key == "delay_us" ? int64_t{60'000'000} : int64_t{1} << 40;
    if (number < 0 || number > limit) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: fault '%s' parameter '%s' must be between 0 and %d, got %d", where,
                          f.kind, key, limit, number));
    }
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
