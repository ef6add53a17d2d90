// What one rank of a hardware run is given and gives back: HwOptions and
// HwResult, apart from RunOnHardware() (hw_runner.h) so that the rank
// (hw_rank.h) reads them without the runner that starts it.

#ifndef LOCKSTEP_HW_HW_RESULT_H_
#define LOCKSTEP_HW_HW_RESULT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sim/sim_result.h"

namespace lockstep::hw {

struct HwOptions {
  uint64_t seed = 1;
  std::string policy;  // empty: the scenario's
  // Every K-th call of each group, all-gather the decision records'
  // fingerprints over the group before running the call; a difference stops
  // the run naming the predicate input that differed. 0: off.
  int consistency_every = 0;
  // Overrides of the scenario's timeouts (ms); 0: the scenario's.
  double kernel_wait_ms = 0;
  double watchdog_ms = 0;
  // Fill HwResult::decision_log with this rank's decisions.
  bool keep_decision_log = false;
};

// What a run found. On rank 0 `result.trace_events` holds every rank's
// dispatched calls (rank, site, group, backend, algorithm, tokens, seq); on
// the other ranks only the verdict and summary are filled.
struct HwResult {
  SimResult result;
  int world = 0;
  std::string
      sharing;  // how the workspaces' peers reach them (LamportWorkspace::sharing()), or "none"
  // With keep_decision_log: this rank's decision log (sim/report/decision_log.h),
  // on every rank.
  std::vector<nlohmann::json> decision_log;
};

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_HW_RESULT_H_
