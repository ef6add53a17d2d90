#include "dispatch/policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/fused_launch.h"
#include "dispatch/pr30700_policy.h"

namespace lockstep {

CommBackend* DispatchPolicy::Choose(const GroupBackends& b, const CallDesc& call,
                                    DecisionRecord& r) const {
  r.call = call;
  if (r.group_world_size <= 1) {
    r.backend = BackendKind::kSkip;
    return nullptr;
  }
  // A fused AR + residual + RMSNorm on the workspace the call site names.
  if (call.context.pattern == FusionPattern::kAllReduceResidualRmsNorm &&
      call.context.norm_workspace != WorkspaceKind::kNone) {
    FusedAllReduceBackend* norm = call.context.norm_workspace == WorkspaceKind::kAttnTp
                                      ? b.norm_on_attn_workspace
                                      : b.norm_on_moe_workspace;
    if (norm == nullptr) {
      r.Check(Predicate::kNormFusionPath, false);
    } else if (NormFusionCanUse(b, *norm, call, r)) {
      r.backend = BackendKind::kFused;
      r.norm_fused = true;
      ConfigureFusedLaunch(b, call, r);
      return norm;
    }
    // Declined: the sum completes as a plain all-reduce of the group, and the
    // caller adds and normalises (layernorm.py:256-267 @ 0.5.23).
  }
  if (b.fused == nullptr) {
    r.Check(Predicate::kGroupTagged, false);
  } else if (FusedCanUse(b, call, r)) {
    r.backend = BackendKind::kFused;
    // Through the tag, the kernel absorbs the norm when the call asks for it
    // and names no workspace (PR #30700's dispatch).
    r.norm_fused = call.context.pattern == FusionPattern::kAllReduceResidualRmsNorm &&
                   call.context.norm_workspace == WorkspaceKind::kNone;
    ConfigureFusedLaunch(b, call, r);
    return b.fused;
  }
  if (b.custom != nullptr && CustomCanUse(b, call, r)) {
    r.backend = BackendKind::kCustom;
    ConfigureCustomLaunch(b, call, r);
    return b.custom;
  }
  r.backend = BackendKind::kNccl;
  return b.nccl;
}

int64_t DispatchPolicy::SchedulerClockUs(const std::vector<int64_t>& gathered, int64_t mine) const {
  return gathered.empty() ? mine : gathered.front();
}

std::optional<int64_t> DispatchPolicy::GraphReplayTokens(const std::vector<int64_t>& captured,
                                                         int64_t agreed, int64_t /*mine*/) const {
  const auto it = std::lower_bound(captured.begin(), captured.end(), agreed);
  if (it == captured.end()) return std::nullopt;
  return *it;
}

bool DispatchPolicy::SkipDraft(const DraftStep& step, const RankLocalState& /*local*/) const {
  return step.max_model_len > 0 && step.context_len + step.draft_tokens > step.max_model_len;
}

FusedTactic DispatchPolicy::ChooseTactic(const std::vector<std::vector<int64_t>>& timings,
                                         const std::vector<int64_t>& /*mine*/) const {
  FusedTactic best;
  int64_t best_slowest = -1;
  for (size_t c = 0; c < timings.size(); ++c) {
    int64_t slowest = 0;
    for (int64_t t : timings[c]) slowest = std::max(slowest, t);
    if (best_slowest < 0 || slowest < best_slowest) {
      best_slowest = slowest;
      best.candidate = static_cast<int>(c);
    }
  }
  return best;
}

void DispatchPolicy::ConfigureFusedLaunch(const GroupBackends& b, const CallDesc& call,
                                          DecisionRecord& r) const {
  const int64_t bytes = call.tensor.bytes();
  r.algorithm = SelectFusedAlgorithm(bytes, r.group_world_size,
                                     b.tactic != nullptr ? *b.tactic : FusedTactic{});
  r.blocks = FusedGridBlocks(bytes);
  r.fp32_acc = true;
  r.kernel_flags = kReferenceKernelFlags;
}

void DispatchPolicy::ConfigureCustomLaunch(const GroupBackends& b, const CallDesc& call,
                                           DecisionRecord& r) const {
  r.kernel_flags = kReferenceCustomKernelFlags;
  if (b.custom != nullptr && b.custom->agreed().generation >= 2) {
    ConfigureCustomV2Launch(b.custom->agreed(), b.custom->v2_config(), call, r);
    return;
  }
  r.blocks = CustomGridBlocks(call.tensor.bytes());
}

absl::Status DispatchPolicy::Execute(const GroupBackends&, CommBackend& chosen, Tensor& tensor,
                                     DecisionRecord& record) const {
  return chosen.AllReduce(tensor, record);
}

WorkspaceTags DispatchPolicy::TagGroups(const ParallelLayout& layout, bool fused_enabled) const {
  return TagGroupsForFusedAllReduce(layout, fused_enabled);
}

GroupRole DispatchPolicy::MoeWorkspaceRole(const ParallelWidths& widths) const {
  return PostExpertsReductionRole(widths);
}

bool DispatchPolicy::ObjectHasCustomAllReduce(const GroupObject& object) const {
  const GroupRole created = object.roles.front();
  return created == GroupRole::kTp || created == GroupRole::kAttnTp ||
         created == GroupRole::kAttnCp || created == GroupRole::kMoeDp;
}

CustomAgreedState DispatchPolicy::CustomLimits(const ServingArgs& args, const Platform& platform,
                                               int64_t configured_max_bytes) const {
  CustomAgreedState s = CustomAllReduceLimits(args, platform);
  if (configured_max_bytes > 0 && args.custom_all_reduce_v2) s.max_bytes = configured_max_bytes;
  return s;
}

FusedCapacityRule DispatchPolicy::CapacityRule(FusionBackend backend) const {
  return CapacityRuleOf(backend);
}

ExitPlan DispatchPolicy::PlanFfnExit(const ParallelWidths& widths, const ExitInputs& in) const {
  return lockstep::PlanFfnExit(widths, in);
}

std::vector<GroupRole> DispatchPolicy::PipelineFlushReductions(const ParallelWidths&,
                                                               const ExitPlan& exit) const {
  if (exit.kind == ExitKind::kDefer || exit.kind == ExitKind::kDeferAllReduceScatter) {
    return {exit.group};
  }
  return exit.reductions;
}

DpBatchPlan DispatchPolicy::PlanDpBatch(const DpBatch& gathered, int attn_tp, int my_group,
                                        const RankLocalState&) const {
  DpBatch aligned = gathered;
  aligned.tokens = AlignDpTokens(gathered.tokens, attn_tp);
  DpBatchPlan plan;
  plan.gather = true;
  plan.padding = SelectDpPadding(aligned);
  plan.global_rows = DpGlobalRows(plan.padding, aligned.tokens);
  plan.my_offset = DpRowOffset(plan.padding, aligned.tokens, my_group);
  if (plan.padding == DpPadding::kMaxLen) {
    const int64_t slot = plan.global_rows / std::max<int64_t>(1, std::ssize(aligned.tokens));
    plan.group_rows.assign(aligned.tokens.size(), slot);
  } else {
    plan.group_rows = aligned.tokens;
  }
  return plan;
}

GroupRole DispatchPolicy::EmbeddingGroup(const ParallelWidths& widths,
                                         bool model_uses_attn_tp_under_dp) const {
  return widths.DpAttention() && model_uses_attn_tp_under_dp ? GroupRole::kAttnTp : GroupRole::kTp;
}

PolicyRegistry::PolicyRegistry() {
  entries_.push_back(Entry{
      .name = "reference",
      .summary = "SGLang 0.5.23's dispatch: rank-invariant predicates, exact-group workspaces, "
                 "errors propagate, deferral only over the TP object",
      .source = "SGLang 0.5.23",
      .make = [] { return std::make_unique<DispatchPolicy>(); },
  });
  entries_.push_back(Entry{
      .name = std::string(kPr30700PolicyName),
      .summary = "PR #30700's original design: the hybrid fusion gate, the MoE workspace on "
                 "MOE_EP, fusion through the group's tag, fp32_acc off",
      .source = "SGLang PR #30700",
      .make = [] { return std::make_unique<Pr30700Policy>(); },
  });
}

absl::Status PolicyRegistry::Register(Entry entry) {
  if (Find(entry.name) != nullptr) {
    return absl::AlreadyExistsError(
        absl::StrCat("policy '", entry.name, "' is already registered"));
  }
  entries_.push_back(std::move(entry));
  return absl::OkStatus();
}

const PolicyRegistry::Entry* PolicyRegistry::Find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<DispatchPolicy>> PolicyRegistry::Create(
    std::string_view name) const {
  if (const Entry* e = Find(name)) return e->make();
  std::vector<std::string> names;
  for (const Entry& e : entries_) names.push_back(e.name);
  return absl::NotFoundError(
      absl::StrFormat("unknown policy '%s'; known policies: %s", name, absl::StrJoin(names, ", ")));
}

}  // namespace lockstep
