// lockstep on real GPUs: the scenario's workload on device tensors, one
// process per GPU under mpirun, driven by the real dispatch core with
// lockstep's kernels and NCCL, under a watchdog, with the simulator's verdicts.

#ifndef LOCKSTEP_HW_HW_RUNNER_H_
#define LOCKSTEP_HW_HW_RUNNER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

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

// Whether the runner can inject fault `kind` on GPUs (the others act inside
// the simulator's memory model: lost or late pushes, uncleared buffers,
// special input values).
bool HwCanInject(std::string_view kind);

// Runs `scenario` on this job's GPUs. Collective over MPI_COMM_WORLD (MPI is
// initialised by the caller); every rank returns. InvalidArgument when the job
// does not fit the scenario (world size, GPUs per node) or a fault cannot be
// injected on hardware.
absl::StatusOr<HwResult> RunOnHardware(const Scenario& scenario, const HwOptions& options,
                                       const PolicyRegistry& registry);

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_HW_RUNNER_H_
