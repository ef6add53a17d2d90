#include "sim/sim_backends.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace lockstep {
namespace {

absl::Status ToStatus(const protocol::ProtocolStatus& s, int rank) {
  switch (s.error) {
    case protocol::ProtocolError::kNone:
      return absl::OkStatus();
    case protocol::ProtocolError::kClearFailed:
      return absl::DataLossError(absl::StrFormat(
          "fused kernel on rank %d: Lamport buffer %d still held data at element %d after it "
          "was cleared; its next use would read stale values as fresh",
          rank, s.buffer, s.offset));
    case protocol::ProtocolError::kWaitExpired:
    case protocol::ProtocolError::kAborted:
      break;
  }
  // A simulated wait is only abandoned when the run shuts down.
  return absl::AbortedError("the simulation ended while this rank waited");
}

}  // namespace

absl::Status SimBackendContext::Enter(const DecisionRecord& record) const {
  const CallPlace place = observer->OnBackendCall(record);
  if (*faults == nullptr) return absl::OkStatus();
  return (*faults)->BeforeBackendCall(rank, place, record);
}

absl::Status SimFusedBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (absl::Status s = context_.Enter(record); !s.ok()) return s;
  auto* data = static_cast<SimTensor*>(tensor.data);
  const int member = workspace_->MemberOf(context_.rank);
  if (member < 0) {
    return absl::InternalError(absl::StrFormat("rank %d is not a member of fusion workspace %s",
                                               context_.rank, workspace_->name()));
  }
  // The protocol reads `in` and writes the tensor afresh.
  const SimTensor in = std::exchange(*data, SimTensor{});
  return ToStatus(workspace_->RunAllReduce(member, record, in, *data), context_.rank);
}

absl::Status SimCustomBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (absl::Status s = context_.Enter(record); !s.ok()) return s;
  auto* data = static_cast<SimTensor*>(tensor.data);
  const SimTensor in = std::exchange(*data, SimTensor{});
  return ToStatus(instance_->RunAllReduce(instance_->MemberOf(context_.rank), record, in, *data),
                  context_.rank);
}

absl::Status SimNcclBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (absl::Status s = context_.Enter(record); !s.ok()) return s;
  auto* data = static_cast<SimTensor*>(tensor.data);
  const SimTensor in = std::exchange(*data, SimTensor{});
  comm_->AllReduce(comm_->MemberOf(context_.rank), tensor.desc.dtype, in, *data);
  return absl::OkStatus();
}

}  // namespace lockstep
