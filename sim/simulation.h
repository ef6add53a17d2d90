// Simulate(): one deterministic run of a scenario. N ranks run the real
// dispatch core as fibers under the seeded scheduler; the simulated backends
// run the real protocol code; detectors turn what happens into a verdict
// (docs/SIMULATOR.md). The same scenario, seed, policy and schedule give the
// same result and trace hash on any machine.
//
//   absl::StatusOr<Scenario> scenario = LoadScenarioFile("tp4-ep2.yaml", "topologies");
//   SimOptions options;
//   options.seed = 7;
//   options.policy = "no-hybrid-fusion-gate";  // a mutant; "" = the scenario's
//   absl::StatusOr<SimResult> r =
//       Simulate(*scenario, options, faults::MakePolicyRegistry());
//   if (r.ok() && IsSilentFailure(r->verdict)) std::cerr << r->summary;
//
// A scenario that declares faults runs through faults::SimulateWithFaults,
// which builds its fault plan (options.faults) first.

#ifndef LOCKSTEP_SIM_SIMULATION_H_
#define LOCKSTEP_SIM_SIMULATION_H_

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"
#include "sim/sim_result.h"

namespace lockstep {

absl::StatusOr<SimResult> Simulate(const Scenario& scenario, const SimOptions& options,
                                   const PolicyRegistry& registry);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SIMULATION_H_
