// The simulator's fault hooks: those of every replica host
// (sim/replica/replica_faults.h) plus the ones inside the protocol memory
// model, which only the simulator has. faults/ implements them; the simulator
// calls them, never by changing the code under test.
//
//   class DropEveryThirdPush : public SimFaultPlan {  // a test's own plan
//    public:
//     bool DropsPush(int rank, int, uint64_t epoch) override {
//       return rank == 1 && epoch % 3 == 0;
//     }
//   };
//   DropEveryThirdPush plan;
//   SimOptions options;
//   options.faults = &plan;  // or faults::FaultInjector from a scenario's list

#ifndef LOCKSTEP_SIM_RUNTIME_FAULT_PLAN_H_
#define LOCKSTEP_SIM_RUNTIME_FAULT_PLAN_H_

#include <cstdint>

#include "sim/replica/replica_faults.h"

namespace lockstep {

class SimFaultPlan : public ReplicaFaults {
 public:
  // The kernels run with flush-to-zero whatever the scenario says.
  virtual bool ForcesFtz() const { return false; }

  // --- In the protocol memory model. `epoch` is the workspace call (1-based). ---
  // A push from `rank` to peer rank `target` that never lands.
  virtual bool DropsPush(int /*rank*/, int /*target*/, uint64_t /*epoch*/) { return false; }
  // A push that lands only after this many more scheduling steps.
  virtual int DelaysPush(int /*rank*/, int /*target*/, uint64_t /*epoch*/) { return 0; }
  // A clear of the previous buffer that does not take.
  virtual bool DropsClear(int /*rank*/, uint64_t /*epoch*/) { return false; }
  // A barrier flag write of the custom all-reduce that never lands.
  virtual bool DropsFlag(int /*rank*/, int /*target*/, uint64_t /*epoch*/) { return false; }
  // CUDA graphs: how many of the rank's captured custom all-reduce inputs,
  // from its first, are never recorded for registration.
  virtual int64_t UnrecordedGraphInputs(int /*rank*/) { return 0; }
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_RUNTIME_FAULT_PLAN_H_
