// Running scenarios with their faults: the entry every lockstep verb uses.

#ifndef LOCKSTEP_FAULTS_RUNNER_H_
#define LOCKSTEP_FAULTS_RUNNER_H_

#include <string>

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace lockstep::faults {

// Simulate() with the scenario's `faults:` injected (validated first: a bad
// fault is InvalidArgument naming file, line and key).
absl::StatusOr<SimResult> SimulateWithFaults(const Scenario& scenario, SimOptions options,
                                             const PolicyRegistry& registry);

// Whether `fault` can fire in `scenario` under `policy`: its at_step is a step
// of the run, its at_layer a layer of the model, its at_call a call its rank
// makes (CountRankCalls), and placed by layer or site, each rank it strikes
// makes a call there (RankCallSites). A fault
// past the end of the run would silently never fire (issue 11). When it
// cannot, `why` says so ("step 5 is past the last step, 2").
bool FaultFires(const Scenario& scenario, const ParallelLayout& layout,
                const DispatchPolicy& policy, const FaultSpec& fault, std::string* why);

// InvalidArgument naming file, line and key for the first fault of the
// scenario's `faults:` that cannot fire (FaultFires) under `policy` (empty:
// the scenario's own). A policy the registry does not know is left for
// Simulate() to refuse.
absl::Status CheckFaultsFire(const Scenario& scenario, const PolicyRegistry& registry,
                             const std::string& policy);

// The scenario with its faults replaced by the swarm draw of `seed`.
absl::StatusOr<Scenario> WithSwarmFaults(const Scenario& scenario, uint64_t seed);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_RUNNER_H_
