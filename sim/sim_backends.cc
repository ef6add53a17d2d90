#include "sim/sim_backends.h"

#include <span>
#include <utility>

#include "absl/strings/str_format.h"
#include "kernels/protocol/wait_report.h"

namespace lockstep {
namespace {

// A protocol call that stopped: the fused kernel's report (written once,
// kernels/protocol/wait_report.h) with the workspace's members named by their
// global ranks, or the run shutting down under a waiting rank.
absl::Status ToStatus(const protocol::ProtocolStatus& s, int rank, std::span<const int> peers,
                      int64_t budget_ns) {
  if (s.ok()) return absl::OkStatus();
  if (s.error == protocol::ProtocolError::kAborted) {
    // A simulated wait is abandoned only when the run shuts down.
    return absl::AbortedError("the simulation ended while this rank waited");
  }
  const int waited = s.waited_peer >= 0 && static_cast<size_t>(s.waited_peer) < peers.size()
                         ? peers[static_cast<size_t>(s.waited_peer)]
                         : s.waited_peer;
  return protocol::LamportFailure(s.error, rank, waited, s.buffer, s.offset,
                                  static_cast<uint64_t>(budget_ns));
}

}  // namespace

absl::Status SimBackendContext::Leave(const DecisionRecord& record, absl::Status status) const {
  if (!status.ok() && status.code() != absl::StatusCode::kAborted) {
    observer->OnBackendError(record, status);
  }
  return status;
}

absl::Status SimFusedBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (absl::Status s = context_.Enter(record); !s.ok()) return context_.Leave(record, s);
  auto* data = static_cast<SimTensor*>(tensor.data);
  const int member = workspace_->MemberOf(context_.rank);
  if (member < 0) {
    return absl::InternalError(absl::StrFormat("rank %d is not a member of fusion workspace %s",
                                               context_.rank, workspace_->name()));
  }
  // The protocol reads `in` and writes the tensor afresh.
  const SimTensor in = TakeTensor(*data);
  const protocol::ProtocolStatus status = workspace_->RunAllReduce(member, record, in, *data);
  return context_.Leave(
      record, ToStatus(status, context_.rank, workspace_->peers(), workspace_->WaitBudgetNs()));
}

absl::Status SimCustomBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (absl::Status s = context_.Enter(record); !s.ok()) return context_.Leave(record, s);
  auto* data = static_cast<SimTensor*>(tensor.data);
  const SimTensor in = TakeTensor(*data);
  // Its barrier waits are unbounded (as SGLang's): a wait is abandoned only
  // when the run shuts down.
  const protocol::ProtocolStatus status =
      instance_->RunAllReduce(instance_->MemberOf(context_.rank), record, in, *data, graph_slot_);
  return status.ok() ? absl::OkStatus()
                     : absl::AbortedError("the simulation ended while this rank waited");
}

absl::Status SimNcclBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (absl::Status s = context_.Enter(record); !s.ok()) return context_.Leave(record, s);
  auto* data = static_cast<SimTensor*>(tensor.data);
  const int member = member_;
  if (post_next_) {
    post_next_ = false;
    posted_ = true;
    comm_->Post(member, tensor.desc.dtype, *data);
    return absl::OkStatus();
  }
  const SimTensor in = TakeTensor(*data);
  comm_->AllReduce(member, tensor.desc.dtype, in, *data);
  if (comm_->TakeExpiry(member)) {
    // As the hardware runner's watchdog ends the call (GpuNcclBackend::WaitFor).
    return context_.Leave(record,
                          protocol::WatchdogExpired("all-reduce", comm_->name(), record.seq,
                                                    static_cast<uint64_t>(comm_->WatchdogNs())));
  }
  return absl::OkStatus();
}

}  // namespace lockstep
