// The internals of one simulated run, shared by simulation.cc (set-up and
// analysis) and rank_program.cc (what each rank executes). Not a public API.

#ifndef LOCKSTEP_SIM_SIM_RUN_H_
#define LOCKSTEP_SIM_SIM_RUN_H_

#include <memory>
#include <vector>

#include "dispatch/group_coordinator.h"
#include "dispatch/policy.h"
#include "dispatch/workspace.h"
#include "sim/memory/custom_allreduce_memory.h"
#include "sim/memory/data.h"
#include "sim/memory/nccl_comm.h"
#include "sim/memory/workspace_memory.h"
#include "sim/replica/group_wiring.h"
#include "sim/replica/replica_config.h"
#include "sim/replica/site.h"
#include "sim/runtime/context.h"
#include "sim/sim_backends.h"
#include "sim/simulation.h"

namespace lockstep {

// One dispatched call, as a rank logged it.
struct CallLog {
  int32_t object = 0;
  SiteRef site;
  DecisionRecord record;
};

struct RankRuntime : CallObserver {
  CallPlace OnBackendCall(const DecisionRecord& record) override {
    if (keep_decisions) calls.push_back(CallLog{current_object, current_site, record});
    const CallPlace place = NextCall();
    ++calls_made;
    return place;
  }
  // Where the rank's next dispatched call is (at `site`: the site of the call
  // it is preparing, else the last one it began).
  CallPlace NextCall() const { return NextCall(current_site); }
  CallPlace NextCall(const SiteRef& site) const {
    return CallPlace{static_cast<int64_t>(calls_made), step,
                     static_cast<int64_t>(calls_made - step_first_call), site};
  }
  // The rank's groups, backends and coordinators (sim/replica/group_wiring.h);
  // wiring.local is its raw state, which the votes read for every member.
  RankWiring wiring;
  // What the rank program is dispatching (set before each call).
  int32_t current_object = 0;
  SiteRef current_site;
  bool keep_decisions = true;

  std::vector<CallLog> calls;
  uint64_t calls_made = 0;
  int step = 0;                  // the step the rank is in
  uint64_t step_first_call = 0;  // calls_made when it began
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
  ReplicaConfig replica;  // the serving configuration, resolved (Setup)
  WorkspaceTags tags;
  std::vector<RankRuntime> ranks;
  // The simulated resources the ranks' backends share, one per group instance
  // (built as the first member wires it).
  std::vector<std::unique_ptr<SimWorkspace>> workspaces;
  std::vector<std::unique_ptr<SimComm>> comms;
  std::vector<std::unique_ptr<SimCustomAllReduce>> customs;
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
