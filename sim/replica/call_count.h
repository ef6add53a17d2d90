// How many all-reduce calls a rank makes in a scenario, without running it:
// the workload program (workload_program.h) hosted on a host that only
// counts. Used to refuse a fault placed past the end of the run (issue 11)
// and by the run's memory estimate.

#ifndef LOCKSTEP_SIM_REPLICA_CALL_COUNT_H_
#define LOCKSTEP_SIM_REPLICA_CALL_COUNT_H_

#include <cstdint>
#include <vector>

#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "sim/replica/site.h"
#include "sim/scenario/scenario.h"

namespace lockstep {

// The dispatched all-reduce calls `rank` makes over the whole run when no
// fault changes its course, under `policy` (fusion into the next layer and
// the post-experts plan are policy decisions). Costs one pass over the
// rank's steps and layers, no simulation.
int64_t CountRankCalls(const Scenario& scenario, const ParallelLayout& layout,
                       const DispatchPolicy& policy, int rank);

// The site of each of those calls, in the order the rank makes them.
std::vector<SiteRef> RankCallSites(const Scenario& scenario, const ParallelLayout& layout,
                                   const DispatchPolicy& policy, int rank);

// An upper bound of CountRankCalls over every rank and policy, in O(pp):
// steps * (embedding and draft projection, two calls per dense layer and four
// per MoE layer of the busiest pipeline stage), with each captured CUDA graph's
// pass counted as a step. Saturates instead of wrapping.
uint64_t MaxCallsPerRank(const Scenario& scenario, const ParallelWidths& widths);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_CALL_COUNT_H_
