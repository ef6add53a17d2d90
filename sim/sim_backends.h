// The simulator's implementations of the backend seam: the real dispatch core
// chooses among them exactly as it would among real backends.

#ifndef LOCKSTEP_SIM_SIM_BACKENDS_H_
#define LOCKSTEP_SIM_SIM_BACKENDS_H_

#include "dispatch/backend.h"
#include "sim/memory/custom_allreduce_memory.h"
#include "sim/memory/nccl_comm.h"
#include "sim/memory/sim_context.h"
#include "sim/memory/workspace_memory.h"
#include "sim/runtime/fault_plan.h"

namespace lockstep {

// Sees every backend call before it runs (the rank's call log: a call that
// never returns must still be on record for the hang report). Returns where
// the call is among the rank's dispatched calls.
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual CallPlace OnBackendCall(const DecisionRecord& record) = 0;
  // The backend of the call `record` decided returned `error` (an injected
  // fault, a bounded wait that gave up): whether the policy propagates or
  // swallows it is seen next (sim_run.h).
  virtual void OnBackendError(const DecisionRecord& /*record*/, const absl::Status& /*error*/) {}
};

// What every simulated backend of one rank shares.
struct SimBackendContext {
  int rank = 0;
  CallObserver* observer = nullptr;
  SimFaultPlan* const* faults = nullptr;  // the run's fault plan slot (may hold null)

  // Logs the call and asks the fault plan whether the backend raises instead.
  // (Inline, as PieceOf in lamport_buffer.h, for what link-time optimisation
  // stopped doing: 7 M instructions of the fused row out of line.)
  absl::Status Enter(const DecisionRecord& record) const {
    const CallPlace place = observer->OnBackendCall(record);
    if (*faults == nullptr) return absl::OkStatus();
    return (*faults)->BeforeBackendCall(rank, place, record);
  }
  // What the backend returns: `status`, with an error told to the observer
  // (except the run shutting down under a waiting rank).
  absl::Status Leave(const DecisionRecord& record, absl::Status status) const;
};

// The fused kAllReduce / kARResidualRMSNorm kernel on a fusion workspace: runs
// the Lamport protocols of kernels/protocol/ over simulated peer memory.
class SimFusedBackend final : public FusedAllReduceBackend {
 public:
  SimFusedBackend(SimBackendContext context, SimWorkspace* workspace)
      : context_(context), workspace_(workspace) {}
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;
  SimWorkspace* workspace() const { return workspace_; }
  void set_workspace(SimWorkspace* workspace) { workspace_ = workspace; }

 private:
  SimBackendContext context_;
  SimWorkspace* workspace_;
};

class SimCustomBackend final : public CustomAllReduceBackend {
 public:
  SimCustomBackend(SimBackendContext context, SimCustomAllReduce* instance)
      : context_(context), instance_(instance) {}
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;
  SimCustomAllReduce* instance() const { return instance_; }
  // The next calls replay a CUDA graph's call on registered inputs (null:
  // the staging buffer). Not owned.
  void set_graph_slot(const SimCustomAllReduce::GraphSlot* slot) { graph_slot_ = slot; }

 private:
  SimBackendContext context_;
  SimCustomAllReduce* instance_;
  const SimCustomAllReduce::GraphSlot* graph_slot_ = nullptr;
};

class SimNcclBackend final : public NcclBackend {
 public:
  SimNcclBackend(SimBackendContext context, SimComm* comm)
      : context_(context), comm_(comm), member_(comm->MemberOf(context.rank)) {}
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;
  SimComm* comm() const { return comm_; }
  // Run-ahead (SimContext::Stream): while set, the next all-reduce posts its
  // input (SimComm::Post) and returns at once, and posted() says so.
  void set_post_next(bool post) {
    post_next_ = post;
    posted_ = false;
  }
  bool posted() const { return posted_; }

 private:
  SimBackendContext context_;
  SimComm* comm_;
  int member_;  // the rank's member index in `comm_`
  bool post_next_ = false;
  bool posted_ = false;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SIM_BACKENDS_H_
