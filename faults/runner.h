// Running scenarios with their faults: the entry every lockstep verb uses.

#ifndef LOCKSTEP_FAULTS_RUNNER_H_
#define LOCKSTEP_FAULTS_RUNNER_H_

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace lockstep::faults {

// Simulate() with the scenario's `faults:` injected (validated first: a bad
// fault is InvalidArgument naming file, line and key).
absl::StatusOr<SimResult> SimulateWithFaults(const Scenario& scenario, SimOptions options,
                                             const PolicyRegistry& registry);

// The scenario with its faults replaced by the swarm draw of `seed`.
absl::StatusOr<Scenario> WithSwarmFaults(const Scenario& scenario, uint64_t seed);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_RUNNER_H_
