// How the simulator represents data: not element by element, but as runs of
// elements that share one provenance — which ranks' contributions (from which
// call) were summed into them — plus, in numeric mode, real element bits.

#ifndef LOCKSTEP_SIM_MEMORY_VALUE_H_
#define LOCKSTEP_SIM_MEMORY_VALUE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "kernels/protocol/element.h"

namespace lockstep {

// Element classes that matter to the Lamport sentinel, and data damage.
enum ValueFlag : uint8_t {
  kHasNegZero = 1,       // some element is −0
  kHasNegSubnormal = 2,  // some element is a negative subnormal
  kShifted = 4,          // elements landed at another offset than written (layouts disagree)
};

// Element classes a fault injects into one input (ValueFlag bits), in its
// elements [first, first + elems) (elems < 0: the whole input).
struct InputInjection {
  uint8_t flags = 0;
  int64_t first = 0;
  int64_t elems = -1;
};

// The contents of one run of elements.
//  - key_sum/count: a multiset fingerprint of the contributions summed into
//    it (contribution = one rank's input at one call instance); equal
//    multisets give equal fingerprints, so a reduction is checked in O(1).
//  - exact: the same multiset spelled out (exact mode only; used to name
//    missing, extra and double-counted ranks in reports).
//  - bits: a digest of how the value was computed (summation order and
//    accumulation type), equal iff two ranks hold bitwise-equal results.
//  - numeric: element bits (numeric mode only), shared by every run that
//    holds them and freed with the last (issue 11: a store that kept every
//    array grew by a tensor per call and rank until the process was killed).
using NumericArray = std::shared_ptr<const std::vector<uint32_t>>;
struct SimValue {
  uint64_t key_sum = 0;
  uint32_t count = 0;
  uint32_t exact = 0;
  uint64_t bits = 0;
  NumericArray numeric;
  int64_t numeric_base = 0;  // element index of numeric array entry 0
  uint8_t flags = 0;
};

// The fingerprint key of rank `rank`'s contribution at call instance `instance`.
uint64_t ContributionKey(int rank, uint64_t instance);

struct Contribution {
  int32_t rank;
  uint64_t instance;
  uint32_t count;
  friend bool operator==(const Contribution&, const Contribution&) = default;
};

// Interned exact multisets of contributions; id 0 is the empty set.
class ContributorSets {
 public:
  ContributorSets();
  uint32_t Singleton(int rank, uint64_t instance);
  uint32_t Merge(uint32_t a, uint32_t b);
  std::span<const Contribution> Get(uint32_t id) const { return sets_[id]; }

 private:
  std::vector<std::vector<Contribution>> sets_;
};

// Element arrays of numeric mode, as raw bits of their element type. An array
// lives as long as a value refers to it; the store only counts what is live
// (for the memory estimate's tests and docs/LIMITS.md).
class NumericStore {
 public:
  NumericArray Add(std::vector<uint32_t> bits);
  // Elements held by arrays still referenced, and the most ever held at once.
  int64_t live_elements() const { return *live_; }
  int64_t peak_elements() const { return peak_; }

 private:
  std::shared_ptr<int64_t> live_ = std::make_shared<int64_t>(0);
  int64_t peak_ = 0;
};

// A piece of a chunk: `len` elements of `value`, starting at element `src` of
// the value's own index space.
struct Piece {
  SimValue value;
  int64_t src = 0;
  int64_t len = 0;
};

// What the simulator's memory policy hands the protocols as a Value: the
// pieces covering a range, in order. Almost always a single piece.
struct SimChunk {
  absl::InlinedVector<Piece, 1> pieces;
  int64_t len = 0;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_VALUE_H_
