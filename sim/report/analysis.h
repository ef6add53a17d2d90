// The end of a simulated run turned into its result: the first finding, if
// one stopped the run; else every rank finished (clean), a rank died and the
// others finished (fail_stop), or no rank can run (a deadlock: hang, or
// fail_stop when every blocked rank waits on a dead rank or a destroyed
// write), with the wait-for graph and the first divergent decision.

#ifndef LOCKSTEP_SIM_REPORT_ANALYSIS_H_
#define LOCKSTEP_SIM_REPORT_ANALYSIS_H_

#include "sim/sim_result.h"
#include "sim/sim_run.h"

namespace lockstep {

SimResult AnalyzeRun(const SimRun& run);

// Records a run's decision logs hold before it first compacts them.
inline constexpr uint64_t kMinDecisionLogCompaction = uint64_t{1} << 16;

// Drops from every rank's decision log (RankRuntime::calls) the records of
// calls no report can name: every member of the call's group made it exactly
// once, all decided alike (the same choice and fingerprint), and every member
// has since made a later call on the same group (so no fallback record can
// still come for it). What the first divergent decision reports is unchanged
// (records keep their positions); returns the records kept.
uint64_t CompactDecisionLogs(SimRun& run);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPORT_ANALYSIS_H_
