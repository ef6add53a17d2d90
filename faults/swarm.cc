#include "faults/swarm.h"

#include <algorithm>

#include "faults/fault_kinds.h"
#include "sim/runtime/rng.h"

namespace lockstep::faults {

int64_t EstimatedCallsPerRank(const Scenario& s, const ParallelLayout& layout) {
  const int layers = s.workload.layers > 0 ? s.workload.layers : s.model.layers;
  const int per_stage = std::max(1, layers / layout.widths().pp);
  // Embedding, attention and MLP (up to two MoE reductions) per layer.
  return static_cast<int64_t>(s.workload.steps) * (2 + 3 * per_stage);
}

std::vector<FaultSpec> DrawSwarmFaults(const Scenario& scenario, const ParallelLayout& layout,
                                       uint64_t seed, int max_kinds) {
  Rng rng(seed ^ 0x5ca1ab1e0ddba11ull);
  std::vector<const FaultKindInfo*> on;
  for (const FaultKindInfo& kind : AllFaultKinds()) {
    if (!kind.applies(scenario, layout)) continue;
    if (rng.Chance(1, 2)) on.push_back(&kind);
  }
  // Keep a random `max_kinds` of them (Fisher-Yates prefix).
  for (size_t i = 0; i < on.size() && static_cast<int>(i) < max_kinds; ++i) {
    std::swap(on[i], on[i + rng.Below(on.size() - i)]);
  }
  if (static_cast<int>(on.size()) > max_kinds) on.resize(static_cast<size_t>(max_kinds));

  const int64_t calls = std::max<int64_t>(1, EstimatedCallsPerRank(scenario, layout));
  const int world = layout.world_size();
  std::vector<FaultSpec> faults;
  for (const FaultKindInfo* kind : on) {
    FaultSpec f;
    f.kind = std::string(kind->name);
    f.ranks.push_back(static_cast<int>(rng.Below(static_cast<uint64_t>(world))));
    kind->draw(scenario, calls, rng, f);
    faults.push_back(std::move(f));
  }
  return faults;
}

std::vector<Verdict> AcceptableVerdicts(const Scenario& scenario) {
  std::vector<Verdict> out = {Verdict::kClean};
  for (const FaultSpec& f : scenario.faults) {
    if (FaultOutcome(f, scenario) == Verdict::kFailStop) {
      out.push_back(Verdict::kFailStop);
      break;
    }
  }
  return out;
}

}  // namespace lockstep::faults
