// Provenance data on GPUs: inputs whose exact sums name their contributors, so
// a reduction over the wrong peers, a partial one or a repeated one is seen
// in its output. Rank r contributes 2^(r mod 8) times a factor of 1 or 2
// (alternating by element and site instance); any sum over distinct ranks of
// an eight-rank block is then exact in bf16, fp16 and fp32, and the sum
// divided by the factor is the bit mask of the ranks.

#ifndef LOCKSTEP_HW_PROVENANCE_H_
#define LOCKSTEP_HW_PROVENANCE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/protocol/element.h"

namespace lockstep::hw {

// Ranks one element can name: sums stay exact in bf16 up to this many.
inline constexpr int kProvenanceRanks = 8;

// Rank `rank`'s input for site instances of parity `parity`: `elems`
// elements of `elem`, as raw bytes.
std::vector<uint8_t> ProvenanceInput(int rank, uint64_t parity, int64_t elems, protocol::Elem elem);

// What went wrong in a reduced row: the ranks it covered (or the value when
// it names no rank set) and those it had to cover.
struct ProvenanceMismatch {
  int64_t element = 0;
  std::string covered;   // "[0,2]" or "(value 3.5)"
  std::string expected;  // "[0,1,2,3]"
};

// Checks one reduced row (the first token's) of site instance `instance`
// against the ranks it had to cover; nullopt when it covers exactly them.
std::optional<ProvenanceMismatch> CheckProvenanceRow(std::span<const uint8_t> row,
                                                     protocol::Elem elem, uint64_t instance,
                                                     std::span<const int> expected);

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_PROVENANCE_H_
