// The mutant zoo: known-bad dispatch policies, each one real bug (its source
// cited), each deriving from the reference DispatchPolicy and overriding the
// one decision the bug got wrong. lockstep is tested by them: every mutant must
// turn some catalogue scenario into a silent failure (mutation score 100%).

#ifndef LOCKSTEP_FAULTS_MUTANTS_H_
#define LOCKSTEP_FAULTS_MUTANTS_H_

#include <span>
#include <string_view>

#include "dispatch/policy.h"
#include "sim/scenario/verdict.h"

namespace lockstep::faults {

struct MutantInfo {
  std::string_view name;
  std::string_view summary;     // what it does differently
  std::string_view source;      // the bug report or review it reproduces
  Verdict expected;             // the silent failure it causes where it is exposed
  std::string_view exposed_by;  // the scenario shape or fault that exposes it
};

// Every mutant, in catalogue order.
std::span<const MutantInfo> AllMutants();

// Adds every mutant to `registry`.
void RegisterMutants(PolicyRegistry& registry);

// "reference" plus every mutant: the registry every lockstep command uses.
PolicyRegistry MakePolicyRegistry();

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_MUTANTS_H_
