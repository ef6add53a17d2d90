// The simulator's implementations of the backend seam: the real dispatch core
// chooses among them exactly as it would among real backends.

#ifndef LOCKSTEP_SIM_SIM_BACKENDS_H_
#define LOCKSTEP_SIM_SIM_BACKENDS_H_

#include "dispatch/backend.h"
#include "kernels/protocol/lamport.h"
#include "sim/context.h"
#include "sim/custom_allreduce_memory.h"
#include "sim/nccl_comm.h"
#include "sim/workspace_memory.h"

namespace lockstep {

// Errors a backend call can raise instead of running (kernel launch failure,
// sticky device error). Installed by the fault injector; none by default.
class BackendFaults {
 public:
  virtual ~BackendFaults() = default;
  virtual absl::Status BeforeCall(int rank, BackendKind backend, const DecisionRecord& record) = 0;
};

// Sees every backend call before it runs (the rank's call log: a call that
// never returns must still be on record for the hang report).
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  virtual void OnBackendCall(const DecisionRecord& record) = 0;
};

// The fused kAllReduce / kARResidualRMSNorm kernel on a fusion workspace: runs
// the Lamport protocols of kernels/protocol/ over simulated peer memory.
class SimFusedBackend final : public FusedAllReduceBackend {
 public:
  SimFusedBackend(int rank, SimWorkspace* workspace, protocol::SentinelTest sentinel,
                  BackendFaults* const* faults, CallObserver* observer)
      : rank_(rank),
        workspace_(workspace),
        sentinel_(sentinel),
        faults_(faults),
        observer_(observer) {}
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;

 private:
  int rank_;
  SimWorkspace* workspace_;
  protocol::SentinelTest sentinel_;
  BackendFaults* const* faults_;  // the run's hook slot, filled after set-up
  CallObserver* observer_;
};

class SimCustomBackend final : public CustomAllReduceBackend {
 public:
  SimCustomBackend(int rank, SimCustomAllReduce* instance, BackendFaults* const* faults,
                   CallObserver* observer)
      : rank_(rank), instance_(instance), faults_(faults), observer_(observer) {}
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;

 private:
  int rank_;
  SimCustomAllReduce* instance_;
  BackendFaults* const* faults_;  // the run's hook slot, filled after set-up
  CallObserver* observer_;
};

class SimNcclBackend final : public NcclBackend {
 public:
  SimNcclBackend(int rank, SimComm* comm, BackendFaults* const* faults, CallObserver* observer)
      : rank_(rank), comm_(comm), faults_(faults), observer_(observer) {}
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;
  SimComm* comm() const { return comm_; }

 private:
  int rank_;
  SimComm* comm_;
  BackendFaults* const* faults_;  // the run's hook slot, filled after set-up
  CallObserver* observer_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SIM_BACKENDS_H_
