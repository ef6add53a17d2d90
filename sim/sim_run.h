// The internals of one simulated run, shared by simulation.cc (set-up and
// analysis) and rank_program.cc (what each rank executes). Not a public API.

#ifndef LOCKSTEP_SIM_SIM_RUN_H_
#define LOCKSTEP_SIM_SIM_RUN_H_

#include <memory>
#include <vector>

#include "dispatch/group_coordinator.h"
#include "dispatch/policy.h"
#include "dispatch/workspace.h"
#include "sim/runtime/context.h"
#include "sim/memory/custom_allreduce_memory.h"
#include "sim/memory/data.h"
#include "sim/memory/nccl_comm.h"
#include "sim/sim_backends.h"
#include "sim/simulation.h"
#include "sim/replica/site.h"
#include "sim/memory/workspace_memory.h"

namespace lockstep {

// One dispatched call, as a rank logged it.
struct CallLog {
  int32_t object = 0;
  SiteRef site;
  DecisionRecord record;
};

struct RankRuntime : CallObserver {
  int64_t OnBackendCall(const DecisionRecord& record) override {
    if (keep_decisions) calls.push_back(CallLog{current_object, current_site, record});
    return static_cast<int64_t>(calls_made++);
  }
  RankLocalState local;  // raw state; the votes below read every member's
  // What the rank program is dispatching (set before each call).
  int32_t current_object = 0;
  SiteRef current_site;
  bool keep_decisions = true;

  Workspace attn_workspace;  // dispatch's (agreed) view of the rank's workspaces
  Workspace moe_workspace;
  std::vector<std::unique_ptr<SimFusedBackend>> fused;          // by group object
  std::vector<std::unique_ptr<SimCustomBackend>> custom;        // by group object
  std::vector<std::unique_ptr<SimNcclBackend>> nccl;            // by group object
  std::vector<std::unique_ptr<GroupCoordinator>> coordinators;  // by group object
  std::vector<CallLog> calls;
  uint64_t calls_made = 0;
};

class SimRun {
 public:
  SimRun(const Scenario& scenario, const ParallelLayout& layout, const DispatchPolicy& policy,
         const SimOptions& options);
  // Ends the fibers of ranks still waiting before the state they use goes.
  ~SimRun() { ctx.scheduler.Shutdown(); }

  // Builds workspaces, communicators and every rank's coordinators.
  absl::Status Setup();
  // Runs the ranks until they finish or something is found.
  void Execute();
  // Turns the end state into a result.
  SimResult Analyze();

  SimContext ctx;
  const DispatchPolicy& policy;
  const SimOptions& options;
  WorkspaceTags tags;
  std::vector<RankRuntime> ranks;
  std::vector<std::unique_ptr<SimWorkspace>> workspaces;
  std::vector<std::unique_ptr<SimComm>> comms;
  std::vector<std::unique_ptr<SimCustomAllReduce>> customs;
  std::vector<std::vector<int32_t>> comm_of;    // [object][rank] -> comms index, -1
  std::vector<std::vector<int32_t>> custom_of;  // [object][rank] -> customs index, -1
  std::vector<int32_t> attn_workspace_of;       // [rank] -> workspaces index, -1
  std::vector<int32_t> moe_workspace_of;
  // What the members of each workspace reported at its rendezvous, ANDed.
  struct WorkspaceVote {
    bool allocated;
  };
  std::vector<WorkspaceVote> workspace_votes;  // [workspace]
  SimMailbox mailbox;
  ReductionChecker checker;
  // Per rank: tokens added to what the workload says (a caller that passes
  // another shape on one rank; outside the dispatch contract).
  std::vector<int64_t> token_skew;
};

// The body of rank `rank`'s fiber: the scenario's forward steps.
void RunRankProgram(SimRun& run, int rank);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SIM_RUN_H_
