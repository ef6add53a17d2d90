#include "faults/runner.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "faults/fault_injector.h"
#include "faults/swarm.h"
#include "sim/replica/call_count.h"

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

bool FaultFires(const Scenario& scenario, const ParallelLayout& layout,
                const DispatchPolicy& policy, const FaultSpec& fault, std::string* why) {
  const int steps = scenario.workload.steps;
  if (fault.at_step >= steps) {
    *why = absl::StrFormat(
        "at_step: step %d is past the end of the run (workload.steps is %d: steps 0 to %d); the "
        "fault would never fire",
        fault.at_step, steps, steps - 1);
    return false;
  }
  const int64_t layers =
      scenario.workload.layers > 0 ? scenario.workload.layers : scenario.model.layers;
  if (fault.at_layer >= layers) {
    *why = absl::StrFormat(
        "at_layer: layer %d is past the model's last layer (it runs %d: layers 0 to %d); the "
        "fault would never fire",
        fault.at_layer, layers, layers - 1);
    return false;
  }
  // The default target (rank 1, or 0 in a one-rank world) when none is given.
  std::vector<int> ranks = fault.ranks;
  if (ranks.empty()) ranks.push_back(layout.world_size() > 1 ? 1 : 0);
  // A site that does not exist is ValidateFault's to name (with a "did you
  // mean").
  // A local-state fault placed at_phase: capture changes state, not a call;
  // a phase that does not exist, or graphs the run does not capture, are
  // ValidateFault's to name.
  const std::optional<CallPhase> phase = CallPhaseFromName(fault.at_phase);
  const bool phase_checked =
      fault.at_phase.empty() ||
      (phase && *phase != CallPhase::kCapture &&
       (*phase == CallPhase::kEager || !scenario.workload.cuda_graph_tokens.empty()));
  if (PlacedBySite(fault) && phase_checked &&
      (fault.at_site.empty() || SiteKindFromName(fault.at_site))) {
    // Each rank it strikes must make a dispatched call there.
    for (int rank : ranks) {
      if (rank < 0 || rank >= layout.world_size()) continue;  // ValidateFault names it
      const std::vector<SiteRef> sites = RankCallSites(scenario, layout, policy, rank);
      CallPlace place;
      bool found = false;
      for (const SiteRef& site : sites) {
        place.site = site;
        found |= AtPlacedSite(fault, place);
      }
      if (found) continue;
      std::vector<std::string> where;
      if (fault.at_step >= 0) where.push_back(absl::StrFormat("step %d", fault.at_step));
      if (fault.at_layer >= 0) where.push_back(absl::StrFormat("layer %d", fault.at_layer));
      if (!fault.at_site.empty()) where.push_back(fault.at_site);
      if (!fault.at_phase.empty()) where.push_back(absl::StrFormat("(%s)", fault.at_phase));
      // The sites the rank does call at that step and layer.
      FaultSpec wider = fault;
      wider.at_site.clear();
      std::vector<std::string> there;
      for (const SiteRef& site : sites) {
        place.site = site;
        const std::string name(SiteKindName(site.kind));
        if (AtPlacedSite(wider, place) &&
            std::find(there.begin(), there.end(), name) == there.end()) {
          there.push_back(name);
        }
      }
      *why = absl::StrFormat(
          "%s: rank %d makes no all-reduce at %s under policy %s (%s); the fault would never "
          "fire",
          !fault.at_site.empty() ? "at_site"
          : fault.at_layer >= 0  ? "at_layer"
                                 : "at_phase",
          rank, absl::StrJoin(where, " "), policy.name(),
          there.empty() ? std::string("nor any other call there")
                        : absl::StrFormat("its call sites there: %s", absl::StrJoin(there, ", ")));
      return false;
    }
    return true;
  }
  if (fault.at_call < 0) return true;
  for (int rank : ranks) {
    if (rank < 0 || rank >= layout.world_size()) continue;  // ValidateFault names it
    const int64_t calls = CountRankCalls(scenario, layout, policy, rank);
    if (fault.at_call >= calls) {
      *why = absl::StrFormat(
          "at_call: call %d is past the end of the run: rank %d makes %d all-reduce calls (0 to "
          "%d) under policy %s; the fault would never fire",
          fault.at_call, rank, calls, calls - 1, policy.name());
      return false;
    }
  }
  return true;
}

absl::Status CheckFaultsFire(const Scenario& scenario, const PolicyRegistry& registry,
                             const std::string& policy) {
  if (scenario.faults.empty()) return absl::OkStatus();
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> p =
      registry.Create(policy.empty() ? scenario.dispatch.policy : policy);
  if (!p.ok()) return absl::OkStatus();
  for (size_t i = 0; i < scenario.faults.size(); ++i) {
    const FaultSpec& f = scenario.faults[i];
    std::string why;
    if (!FaultFires(scenario, *layout, **p, f, &why)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: faults[%d].%s",
                          scenario.path.empty() ? scenario.name : scenario.path, f.line, i, why));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Scenario> WithSwarmFaults(const Scenario& scenario, uint64_t seed) {
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  Scenario swarm = scenario;
  swarm.faults = DrawSwarmFaults(scenario, *layout, seed);
  return swarm;
}

}  // namespace lockstep::faults
