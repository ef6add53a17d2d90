// "Did you mean" suggestions for misspelled flags, keys and names.

#ifndef LOCKSTEP_SIM_SCENARIO_DID_YOU_MEAN_H_
#define LOCKSTEP_SIM_SCENARIO_DID_YOU_MEAN_H_

#include <span>
#include <string>
#include <string_view>

namespace lockstep {

// Levenshtein distance between `a` and `b`.
int EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is close enough to be a plausible
// typo (distance at most a third of the word's length, and at least 1), else
// empty. Ties go to a candidate with the word's first letter, then to the
// earlier one.
std::string ClosestMatch(std::string_view word, std::span<const std::string_view> candidates);

// "; did you mean 'x'?" or "" when nothing is close.
std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_DID_YOU_MEAN_H_
