// How the simulator represents data: not element by element, but as runs of
// elements that share one provenance — which ranks' contributions (from which
// call) were summed into them — plus, in numeric mode, real element bits.

#ifndef LOCKSTEP_SIM_MEMORY_VALUE_H_
#define LOCKSTEP_SIM_MEMORY_VALUE_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/protocol/element.h"
#include "sim/memory/small_vector.h"

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
//    An array holds the elements the run's sampler keeps (NumericSampler),
//    from the one of rank `first` on: entry j is the contribution element
//    of rank first + j.
struct NumericBits {
  int64_t first = 0;
  std::vector<uint32_t> bits;
};
using NumericArray = std::shared_ptr<const NumericBits>;
struct SimValue {
  uint64_t key_sum = 0;
  uint32_t count = 0;
  uint32_t exact = 0;
  uint64_t bits = 0;
  NumericArray numeric;
  // Where the contributions' element 0 sits in this value's own index
  // space: element x of the value is contribution element x - numeric_base
  // (slices and rebased chunks move both together).
  int64_t numeric_base = 0;
  uint8_t flags = 0;

  // Every field equal (the numeric array by identity): one value, as two
  // pieces that can be joined, or two members' results that can be shared,
  // must hold.
  friend bool operator==(const SimValue&, const SimValue&) = default;
};
// A SimValue may be relocated with memcpy (SmallVector does): its only member
// that is not trivially copyable is the shared_ptr, two pointers into
// storage of its own, never into the value.
template <>
struct IsTriviallyRelocatable<SimValue> : std::true_type {};

// Which elements numeric data carries, by the contributions' own element
// index (an input's element e), so that every rank's input, every partial
// sum and the reference carry the same ones: `block` consecutive elements at
// the start of every 2^shift (`workload.data: sampled`), or all of them
// (`numeric`: shift 0, block 1). Kept elements are counted by Rank, so an
// array of the kept elements of [a, b) has Count(a, b) entries and element
// e (kept) is its entry Rank(e) - Rank(a).
struct NumericSampler {
  int shift = 0;
  int64_t block = 1;

  int64_t stride() const { return int64_t{1} << shift; }
  bool all() const { return block >= stride(); }
  // Kept elements before element a.
  int64_t Rank(int64_t a) const {
    return (a >> shift) * block + std::min(a & (stride() - 1), block);
  }
  int64_t Count(int64_t a, int64_t b) const { return Rank(b) - Rank(a); }
  // The kept element of rank r (r >= 0).
  int64_t Unrank(int64_t r) const { return ((r / block) << shift) + r % block; }
  // Whether data moved by `delta` elements keeps its kept elements kept
  // (else a sum of it with unmoved data has no common elements to add).
  bool Aligned(int64_t delta) const { return all() || (delta & (stride() - 1)) == 0; }
  // Calls body(lo, hi) for each range of kept elements in [a, b), in order.
  template <class Body>
  void ForEachKept(int64_t a, int64_t b, Body&& body) const {
    if (all()) {
      if (a < b) body(a, b);
      return;
    }
    const int64_t mask = stride() - 1;
    for (int64_t at = a; at < b;) {
      const int64_t start = at & ~mask;
      if (at - start < block) body(at, std::min(b, start + block));
      at = start + stride();
    }
  }
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
  // Entry 0 of `bits` is the kept element of rank `first`.
  NumericArray Add(std::vector<uint32_t> bits, int64_t first);
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
template <>
struct IsTriviallyRelocatable<Piece> : IsTriviallyRelocatable<SimValue> {};

// What the simulator's memory policy hands the protocols as a Value: the
// pieces covering a range, in order. Almost always a single piece.
struct SimChunk {
  SmallVector<Piece> pieces;
  int64_t len = 0;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_VALUE_H_
