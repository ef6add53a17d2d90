#include "faults/runner.h"

#include "faults/fault_injector.h"
#include "faults/swarm.h"

namespace lockstep::faults {

absl::StatusOr<SimResult> SimulateWithFaults(const Scenario& scenario, SimOptions options,
                                             const PolicyRegistry& registry) {
  std::unique_ptr<FaultInjector> injector;
  if (!scenario.faults.empty()) {
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
    if (!layout.ok()) return layout.status();
    absl::StatusOr<std::unique_ptr<FaultInjector>> created =
        FaultInjector::Create(scenario, *layout, scenario.faults);
    if (!created.ok()) return created.status();
    injector = *std::move(created);
    options.faults = injector.get();
  }
  return Simulate(scenario, options, registry);
}

absl::StatusOr<Scenario> WithSwarmFaults(const Scenario& scenario, uint64_t seed) {
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  Scenario swarm = scenario;
  swarm.faults = DrawSwarmFaults(scenario, *layout, seed);
  return swarm;
}

}  // namespace lockstep::faults
