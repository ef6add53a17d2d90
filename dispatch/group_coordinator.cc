#include "dispatch/group_coordinator.h"

#include <utility>

namespace lockstep {

namespace {

// A record as Decide starts it. Copied from a constant, the reset is a block
// copy; `record = DecisionRecord{}` built the temporary field by field first
// (53 instructions a call in sim_bench's NCCL row, 3 % of a rank-call).
constexpr DecisionRecord kFreshRecord{};

}  // namespace

GroupCoordinator::GroupCoordinator(std::string name, GroupId group, int world_size,
                                   int rank_in_group, WorkspaceKind hint, GroupBackends backends,
                                   const DispatchPolicy* policy)
    : name_(std::move(name)),
      group_(group),
      world_size_(world_size),
      rank_in_group_(rank_in_group),
      hint_(hint),
      backends_(backends),
      policy_(policy) {}

CommBackend* GroupCoordinator::Decide(const CallDesc& call, DecisionRecord& record) {
  record = kFreshRecord;
  record.seq = next_seq_++;
  record.group = group_;
  record.group_world_size = world_size_;
  return policy_->Choose(backends_, call, record);
}

absl::Status GroupCoordinator::AllReduce(Tensor& tensor, DecisionRecord* record_out,
                                         const CallContext& context) {
  if (record_out == nullptr) {
    // A record the caller does not keep; with one given, it is decided into
    // directly (no record on this frame to fill and copy).
    DecisionRecord local;
    return AllReduce(tensor, &local, context);
  }
  DecisionRecord& record = *record_out;
  CallDesc call;
  call.tensor = tensor.desc;
  call.context = context;
  CommBackend* chosen = Decide(call, record);
  if (chosen == nullptr) {
    if (record.backend == BackendKind::kSkip) return absl::OkStatus();
    return absl::FailedPreconditionError("group '" + name_ +
                                         "' has no NCCL backend to end its all-reduce chain");
  }
  if (hook_ != nullptr) {
    if (absl::Status s = hook_->BeforeExecute(record, *chosen); !s.ok()) return s;
  }
  return policy_->Execute(backends_, *chosen, tensor, record);
}

absl::Status GroupCoordinator::Replay(CommBackend& chosen, Tensor& tensor,
                                      DecisionRecord& recorded) {
  if (hook_ != nullptr) {
    if (absl::Status s = hook_->BeforeExecute(recorded, chosen); !s.ok()) return s;
  }
  return policy_->Execute(backends_, chosen, tensor, recorded);
}

}  // namespace lockstep
