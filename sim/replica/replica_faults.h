// The hooks through which faults reach one replica, whatever runs it: the
// simulator and the hardware runner both call them, at set-up, at step
// boundaries and at the backend seam. faults/ implements them from a
// scenario's `faults:` list (FaultInjector); the code under test is never
// edited. The simulator adds hooks inside its protocol memory model
// (sim/runtime/fault_plan.h).

#ifndef LOCKSTEP_SIM_REPLICA_REPLICA_FAULTS_H_
#define LOCKSTEP_SIM_REPLICA_REPLICA_FAULTS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "dispatch/decision.h"
#include "dispatch/group_layout.h"
#include "dispatch/rank_local_state.h"
#include "dispatch/workspace.h"
#include "sim/replica/site.h"

namespace lockstep {

// Where the workspaces of one kind rendezvous: the group role whose subgroups
// they are built on, and their generation (> 0: re-initialised).
struct WorkspaceBinding {
  GroupRole role = GroupRole::kAttnTp;
  uint32_t generation = 0;
};

// Where a dispatched call is in the run, for faults placed on calls.
struct CallPlace {
  int64_t call = 0;          // the rank's dispatched all-reduce index, from 0
  int step = 0;              // the forward step it belongs to
  int64_t call_in_step = 0;  // its index among the rank's calls of that step
  SiteRef site;              // where in the model: step, layer (-1: none) and site kind
};

// What an input fault puts into one call's input: element classes
// (ValueFlag bits: −0, negative subnormals) in rows [first_row, first_row +
// rows) of it, or in the whole input (rows 0).
struct InjectedInput {
  uint8_t flags = 0;
  int64_t first_row = 0;
  int64_t rows = 0;
};

class ReplicaFaults {
 public:
  virtual ~ReplicaFaults() = default;

  // --- Set-up (sim/replica/group_wiring.h calls them, in this order). ---
  // The workspace tags the policy chose (a fault may tag other groups).
  virtual void AdjustTags(const ParallelLayout& /*layout*/, WorkspaceTags& /*tags*/) {}
  // The group role the workspaces of `kind` rendezvous on, given the one they
  // should (a fault may bind them to an equal-size group of other peers).
  virtual WorkspaceBinding BindWorkspaces(const ParallelLayout& /*layout*/, WorkspaceKind /*kind*/,
                                          GroupRole intended) {
    return WorkspaceBinding{intended, 0};
  }
  // Rank `rank`'s raw local state, before the cross-rank votes.
  virtual void InitLocalState(int /*rank*/, RankLocalState& /*state*/) {}

  // --- Step boundaries. ---
  // Rank-local state that changes from `step` on.
  virtual void AtStepStart(int /*rank*/, int /*step*/, RankLocalState& /*state*/) {}
  // Rank-local state while the rank captures a CUDA graph (`capturing`:
  // the capture begins; else it ends): faults placed at_phase: capture
  // change it for the capture only, and its end restores it.
  virtual void AtCapture(int /*rank*/, bool /*capturing*/, RankLocalState& /*state*/) {}
  // The delays (µs) a straggler adds to `rank`'s `step`, one per fault.
  virtual std::vector<int64_t> StragglerDelaysUs(int /*rank*/, int /*step*/) const { return {}; }

  // --- The backend seam. `place` is where the rank's call is. ---
  // Whether rank `rank` dies before the call at `place` (it never makes it).
  virtual bool KillsRank(int /*rank*/, const CallPlace& /*place*/) { return false; }
  // An error the backend raises instead of running (launch failure, sticky
  // device error).
  virtual absl::Status BeforeBackendCall(int /*rank*/, const CallPlace& /*place*/,
                                         const DecisionRecord& /*record*/) {
    return absl::OkStatus();
  }
  // What is injected into the input of the rank's call at `place`.
  virtual InjectedInput InputFault(int /*rank*/, const CallPlace& /*place*/) { return {}; }
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_REPLICA_FAULTS_H_
