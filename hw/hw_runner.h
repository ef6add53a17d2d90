// lockstep on real GPUs: the scenario's workload on device tensors, one
// process per GPU under mpirun, driven by the real dispatch core with
// lockstep's kernels and NCCL, under a watchdog, with the simulator's verdicts.

#ifndef LOCKSTEP_HW_HW_RUNNER_H_
#define LOCKSTEP_HW_HW_RUNNER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "hw/hw_result.h"
#include "sim/scenario/scenario.h"

namespace lockstep::hw {

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
