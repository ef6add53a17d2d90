#include "sim/scenario/did_you_mean.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace lockstep {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diagonal = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string ClosestMatch(std::string_view word, std::span<const std::string_view> candidates) {
  const int limit = std::max(1, static_cast<int>(word.size()) / 3);
  std::string_view best;
  int best_distance = limit + 1;
  for (std::string_view c : candidates) {
    const int d = EditDistance(word, c);
    // On a tie, a candidate that starts like the word is the likelier typo.
    const bool better_tie = d == best_distance && !best.empty() && !word.empty() &&
                            c.front() == word.front() && best.front() != word.front();
    if (d < best_distance || better_tie) {
      best = c;
      best_distance = d;
    }
  }
  return std::string(best);
}

std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates) {
  std::string match = ClosestMatch(word, candidates);
  if (match.empty()) return "";
  return absl::StrCat("; did you mean '", match, "'?");
}

}  // namespace lockstep
