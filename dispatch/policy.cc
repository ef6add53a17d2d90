#include "dispatch/policy.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/fused_launch.h"

namespace lockstep {

CommBackend* DispatchPolicy::Choose(const GroupBackends& b, const CallDesc& call,
                                    DecisionRecord& r) const {
  r.call = call;
  if (r.group_world_size <= 1) {
    r.backend = BackendKind::kSkip;
    return nullptr;
  }
  if (b.fused == nullptr) {
    r.Check(Predicate::kGroupTagged, false);
  } else if (FusedCanUse(b, call, r)) {
    r.backend = BackendKind::kFused;
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

void DispatchPolicy::ConfigureFusedLaunch(const GroupBackends&, const CallDesc& call,
                                          DecisionRecord& r) const {
  const int64_t bytes = call.tensor.bytes();
  r.algorithm = SelectFusedAlgorithm(bytes, r.group_world_size);
  r.blocks = FusedGridBlocks(bytes);
  r.fp32_acc = false;
  r.kernel_flags = kReferenceKernelFlags;
}

void DispatchPolicy::ConfigureCustomLaunch(const GroupBackends&, const CallDesc& call,
                                           DecisionRecord& r) const {
  r.blocks = CustomGridBlocks(call.tensor.bytes());
}

absl::Status DispatchPolicy::Execute(const GroupBackends&, CommBackend& chosen, Tensor& tensor,
                                     DecisionRecord& record) const {
  return chosen.AllReduce(tensor, record);
}

WorkspaceTags DispatchPolicy::TagGroups(const ParallelLayout& layout, bool fused_enabled) const {
  return TagGroupsForFusedAllReduce(layout, fused_enabled);
}

bool DispatchPolicy::ShouldFuseMlpAllReduceWithNextLayer(const ParallelWidths& widths,
                                                         const FusionGateInputs& inputs) const {
  return lockstep::ShouldFuseMlpAllReduceWithNextLayer(widths, inputs);
}

PostExpertsPlan DispatchPolicy::PlanPostExperts(const ParallelWidths& widths,
                                                bool fuse_with_next_layer) const {
  return PlanPostExpertsReduction(widths, fuse_with_next_layer);
}

int64_t DispatchPolicy::DpPaddedTokens(const std::vector<int64_t>& gathered, int64_t, int attn_dp,
                                       const RankLocalState&) const {
  int64_t largest = 0;
  for (int64_t c : gathered) largest = std::max(largest, c);
  return largest * attn_dp;
}

PostExpertsPlan DispatchPolicy::PlanPipelineFlush(const ParallelWidths& widths) const {
  return PlanPostExperts(widths, false);
}

PolicyRegistry::PolicyRegistry() {
  entries_.push_back(Entry{
      .name = "reference",
      .summary = "the reference design: rank-invariant predicates, exact-group workspaces, "
                 "errors propagate, hybrid fusion gate",
      .source = "SGLang PR #30700",
      .make = [] { return std::make_unique<DispatchPolicy>(); },
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
