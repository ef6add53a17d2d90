// How many seeds a property test runs. The full count by default; fewer where
// the environment asks, through LOCKSTEP_PROPERTY_SEEDS (the sanitizer stage
// of .ci/run and the asan/tsan test presets set it, since every run there is
// ~30x slower). Only loops that check the reference design read it: a loop
// that must find a mutant's failure keeps its full count.

#ifndef LOCKSTEP_TESTS_PROPERTY_SEEDS_H_
#define LOCKSTEP_TESTS_PROPERTY_SEEDS_H_

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/numbers.h"

namespace lockstep::testing {

inline uint64_t PropertySeeds(uint64_t full) {
  const char* cap = std::getenv("LOCKSTEP_PROPERTY_SEEDS");
  uint64_t n = 0;
  if (cap == nullptr || !absl::SimpleAtoi(cap, &n) || n == 0) return full;
  return std::min(full, n);
}

}  // namespace lockstep::testing

#endif  // LOCKSTEP_TESTS_PROPERTY_SEEDS_H_
