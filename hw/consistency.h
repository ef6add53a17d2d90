// Consistency mode (`lockstep hw --consistency K`): before a call runs, the
// members of its group all-gather their decision records and compare
// fingerprints, so a decision that diverged stops the run — naming the input
// that differed — before the call can hang.

#ifndef LOCKSTEP_HW_CONSISTENCY_H_
#define LOCKSTEP_HW_CONSISTENCY_H_

#include <mpi.h>

#include <optional>
#include <string>

#include "dispatch/decision.h"
#include "dispatch/group_layout.h"
#include "hw/bounded_wait.h"
#include "sim/replica/site.h"
#include "sim/scenario/finding.h"

namespace lockstep::hw {

// Compares `record` (rank `rank`'s decision at `site` on the group `group`,
// whose members are `comm`'s) with every member's. nullopt when they agree;
// else the finding: kDecisionConsistency naming the first differing input,
// or kBoundedWait (timed out) when a member did not take part by `deadline`.
// Collective over `comm`.
std::optional<Finding> CheckDecisionConsistency(MPI_Comm comm, const DecisionRecord& record,
                                                const ParallelLayout& layout, const SiteRef& site,
                                                const std::string& group, int rank,
                                                Clock::time_point deadline);

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_CONSISTENCY_H_
