// The end of a simulated run turned into its result: the first finding, if
// one stopped the run; else every rank finished (clean), a rank died and the
// others finished (fail_stop), or no rank can run (a deadlock: hang, or
// fail_stop when every blocked rank waits on a dead rank or a destroyed
// write), with the wait-for graph and the first divergent decision.

#ifndef LOCKSTEP_SIM_REPORT_ANALYSIS_H_
#define LOCKSTEP_SIM_REPORT_ANALYSIS_H_

#include "sim/sim_run.h"
#include "sim/simulation.h"

namespace lockstep {

SimResult AnalyzeRun(const SimRun& run);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPORT_ANALYSIS_H_
