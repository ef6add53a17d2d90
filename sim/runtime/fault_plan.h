// The hooks through which faults reach a simulated run. faults/ implements
// them from a scenario's `faults:` list (or from a seed in swarm mode); the
// simulator calls them at the seam and in the protocol memory model, never by
// changing the code under test.

#ifndef LOCKSTEP_SIM_RUNTIME_FAULT_PLAN_H_
#define LOCKSTEP_SIM_RUNTIME_FAULT_PLAN_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "dispatch/decision.h"
#include "dispatch/group_layout.h"
#include "dispatch/rank_local_state.h"
#include "dispatch/workspace.h"

namespace lockstep {

class SimRun;

class SimFaultPlan {
 public:
  virtual ~SimFaultPlan() = default;

  // --- Set-up, in this order. ---
  // The workspace tags the policy chose (a fault may tag other groups).
  virtual void AdjustTags(const ParallelLayout& /*layout*/, WorkspaceTags& /*tags*/) {}
  // The group role whose subgroups the workspaces of `kind` rendezvous on,
  // given the one they should (a fault may bind them to an equal-size group
  // of other peers), and their generation (> 0: re-initialised).
  struct Binding {
    GroupRole role;
    uint32_t generation = 0;
  };
  virtual Binding BindWorkspaces(const ParallelLayout& /*layout*/, WorkspaceKind /*kind*/,
                                 GroupRole intended) {
    return Binding{intended, 0};
  }
  // Rank `rank`'s raw local state before the cross-rank votes.
  virtual void InitLocalState(int /*rank*/, RankLocalState& /*state*/) {}
  // Everything else, once the run is built.
  virtual absl::Status AfterSetup(SimRun& /*run*/) { return absl::OkStatus(); }

  // --- During the run. ---
  // Before rank `rank`'s `call`-th dispatched all-reduce (0-based): a rank
  // that dies here never makes the call.
  virtual bool KillsRank(int /*rank*/, int64_t /*call*/) { return false; }
  // At the start of every step of every rank (stragglers, state that changes
  // mid-run).
  virtual void OnStep(SimRun& /*run*/, int /*rank*/, int /*step*/) {}
  // An error the backend raises instead of running (launch failure, sticky
  // device error), for the rank's `call`-th all-reduce.
  virtual absl::Status BeforeBackendCall(int /*rank*/, int64_t /*call*/,
                                         const DecisionRecord& /*record*/) {
    return absl::OkStatus();
  }
  // Element classes injected into a rank's input (ValueFlag bits: −0,
  // negative subnormals).
  virtual uint8_t InputFlags(int /*rank*/, int64_t /*call*/) { return 0; }
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
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_RUNTIME_FAULT_PLAN_H_
