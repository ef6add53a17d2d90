// Shrinking a failing run: the smallest scenario (fewer ranks where the layout
// allows, fewer steps, layers, tokens and faults) that still gives the same
// verdict, found greedily by re-running candidates with the failing seed.

#ifndef LOCKSTEP_FAULTS_SHRINK_H_
#define LOCKSTEP_FAULTS_SHRINK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace lockstep::faults {

struct ShrinkResult {
  Scenario scenario;  // the smallest failing scenario found (policy and expect set)
  uint64_t seed = 0;  // the seed that reproduces it
  Verdict verdict = Verdict::kClean;
  int runs = 0;                         // simulations tried
  std::vector<std::string> reductions;  // what was removed, in order
};

// Requires `failing` to give a silent failure or an unexpected verdict under
// `options` (seed, policy, schedule); FailedPrecondition otherwise. Candidates
// are tried with the original seed and with seeds 1-3; at most `max_runs`
// simulations.
absl::StatusOr<ShrinkResult> Shrink(const Scenario& failing, const SimOptions& options,
                                    const PolicyRegistry& registry, int max_runs = 600);

// "8 ranks, 3 steps, 4 layers, 2 faults"
std::string ScenarioSize(const Scenario& scenario);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_SHRINK_H_
