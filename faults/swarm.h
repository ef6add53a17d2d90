// Swarm mode (FoundationDB-style): a seed chooses which fault kinds are on in
// a run, then where and when each strikes. Over many seeds, every combination
// of kinds is tried, with faults landing where nobody thought to put them.

#ifndef LOCKSTEP_FAULTS_SWARM_H_
#define LOCKSTEP_FAULTS_SWARM_H_

#include <cstdint>
#include <vector>

#include "dispatch/group_layout.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/verdict.h"

namespace lockstep::faults {

// Draws the faults of seed `seed`: each kind that applies to the scenario is
// enabled with probability 1/2 (at most `max_kinds`), then each enabled kind
// gets a random rank, call or step and parameters. Deterministic in the seed.
std::vector<FaultSpec> DrawSwarmFaults(const Scenario& scenario, const ParallelLayout& layout,
                                       uint64_t seed, int max_kinds = 3);

// The verdicts the reference design may give with `scenario`'s faults:
// clean, plus fail_stop when any of them is one the design can only surface
// there (FaultOutcome).
std::vector<Verdict> AcceptableVerdicts(const Scenario& scenario);

// Rank-calls of one rank over the whole scenario (an upper bound), to place
// faults inside the run.
int64_t EstimatedCallsPerRank(const Scenario& scenario, const ParallelLayout& layout);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_SWARM_H_
