#include "sim/sim_backends.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace lockstep {
namespace {

// A simulated protocol only stops early when the run shuts down.
absl::Status ToStatus(const protocol::ProtocolStatus& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::AbortedError("the simulation ended while this rank waited");
}

}  // namespace

absl::Status SimFusedBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  observer_->OnBackendCall(record);
  if (*faults_ != nullptr) {
    if (absl::Status s = (*faults_)->BeforeCall(rank_, BackendKind::kFused, record); !s.ok()) {
      return s;
    }
  }
  auto* data = static_cast<SimTensor*>(tensor.data);
  const int member = workspace_->MemberOf(rank_);
  if (member < 0) {
    return absl::InternalError(absl::StrFormat("rank %d is not a member of fusion workspace %s",
                                               rank_, workspace_->name()));
  }
  // The protocol reads `in` and writes the tensor afresh.
  const SimTensor in = std::exchange(*data, SimTensor{});
  return ToStatus(workspace_->RunAllReduce(member, record, in, *data, sentinel_));
}

absl::Status SimCustomBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  observer_->OnBackendCall(record);
  if (*faults_ != nullptr) {
    if (absl::Status s = (*faults_)->BeforeCall(rank_, BackendKind::kCustom, record); !s.ok()) {
      return s;
    }
  }
  auto* data = static_cast<SimTensor*>(tensor.data);
  // The protocol reads `in` and writes the tensor afresh.
  const SimTensor in = std::exchange(*data, SimTensor{});
  return ToStatus(instance_->RunAllReduce(instance_->MemberOf(rank_), record, in, *data));
}

absl::Status SimNcclBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  observer_->OnBackendCall(record);
  if (*faults_ != nullptr) {
    if (absl::Status s = (*faults_)->BeforeCall(rank_, BackendKind::kNccl, record); !s.ok()) {
      return s;
    }
  }
  auto* data = static_cast<SimTensor*>(tensor.data);
  const SimTensor in = std::exchange(*data, SimTensor{});
  comm_->AllReduce(comm_->MemberOf(rank_), tensor.desc.dtype, in, *data);
  return absl::OkStatus();
}

}  // namespace lockstep
