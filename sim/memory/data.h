// Rank data in the simulator: tensors as run lists, deterministic inputs,
// the arithmetic the protocols do on them, and the checks applied where a
// reduced value is consumed.

#ifndef LOCKSTEP_SIM_MEMORY_DATA_H_
#define LOCKSTEP_SIM_MEMORY_DATA_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/inlined_vector.h"
#include "dispatch/stable_hash.h"
#include "kernels/protocol/lamport.h"
#include "sim/memory/mixed_key_index.h"
#include "sim/memory/run_list.h"
#include "sim/memory/sim_context.h"
#include "sim/replica/site.h"

namespace lockstep {

// The payload behind a simulated Tensor's `data` pointer.
struct SimTensor {
  RunList runs;
  int64_t elems = 0;
  // Element of the contributions' own index space that element 0 holds (a
  // slice of a larger input: the rows a reduce-scatter returns).
  int64_t origin = 0;
};

// Rank `rank`'s contribution at call instance `instance`, only on elements
// [first, first + n) of a tensor of `elems` (zeros elsewhere: what attention
// DP's gather buffer holds before the gather).
SimTensor MakeInputRange(SimContext& ctx, int rank, uint64_t instance, int64_t elems, int64_t first,
                         int64_t n);

// `tensor`'s contents, moved out; `tensor` is left empty (a backend reads its
// input and writes the tensor afresh).
inline SimTensor TakeTensor(SimTensor& tensor) {
  SimTensor out = std::move(tensor);
  tensor.runs.Reset();
  tensor.elems = 0;
  tensor.origin = 0;
  return out;
}

// Elements [first, first + n) of `tensor`, as a tensor of their own.
SimTensor SliceElements(const SimTensor& tensor, int64_t first, int64_t n);

// `chunk` moved by `shift` elements in its values' index space (a piece read
// at element x and written at x - shift keeps reading the same data).
SimChunk Rebased(SimChunk chunk, int64_t shift);

// Rank `rank`'s contribution at call instance `instance`: `elems` elements.
// `injected` adds element classes a fault put in some of the data (−0,
// negative subnormals); in numeric mode they are real elements, at the
// range's first element (−0) and its middle (the subnormal).
SimTensor MakeInput(SimContext& ctx, int rank, uint64_t instance, int64_t elems,
                    const InputInjection& injected);
// The same with nothing injected (every input of a run without faults).
SimTensor MakeInput(SimContext& ctx, int rank, uint64_t instance, int64_t elems);

// The numeric input of (rank, instance), regenerated (pure function of the
// seed): the reference the checks sum in double precision.
std::vector<uint32_t> NumericInput(const SimContext& ctx, int rank, uint64_t instance,
                                   int64_t elems, const InputInjection& injected = {});

// A running sum of chunks of one element range, in the order added. The range
// is cut where the chunks' pieces begin and end, so elements with different
// contributors keep them apart (attention DP's gather buffer: each group's
// rows hold their own group's sum); a chunk of one piece is one segment.
struct AccumulatorSegment {
  int64_t begin = 0;  // offsets into the range
  int64_t end = 0;
  SimValue sum;
};
template <>
struct IsTriviallyRelocatable<AccumulatorSegment> : IsTriviallyRelocatable<SimValue> {};
struct Accumulator {
  using Segment = AccumulatorSegment;
  bool empty = true;
  bool fp32 = false;  // accumulate in fp32 (else round to the element type per add)
  SmallVector<Segment> segments;
  int64_t src = 0;
  int64_t len = 0;
  // Numeric mode: the kept elements of the sum (NumericSampler), from
  // contribution element src - numeric_base on (numeric_base: that of the
  // first piece that carries elements).
  int64_t numeric_base = 0;
  std::vector<float> values;

  // The contribution element the sum's element 0 holds (numeric mode).
  int64_t contribution_begin() const { return src - numeric_base; }
};

// AccumulatorAdd (below) but for its inline case: the first add, and every
// add of numeric data, of several pieces or into several segments.
void AccumulatorAddSlow(SimContext& ctx, Accumulator& acc, const SimChunk& chunk);
// The provenance half of one add (numeric elements aside): `v`'s
// contributions summed into `sum`, in the order added; `shifted`: `v`'s
// elements sit at other offsets than the sum's. AccumulatorAdd applies it to
// every segment a piece covers; a sum of whole runs applies it once. `V` is
// a SimValue, or a value's symbolic fields kept apart from it (a posted
// call's SimComm::WholeInput). (Always inline: it runs once per member of
// every call, and link-time optimisation otherwise weighs its call sites
// against each other.)
template <class V>
ABSL_ATTRIBUTE_ALWAYS_INLINE inline void AddToSum(SimContext& ctx, SimValue& sum, const V& v,
                                                  bool fp32, bool shifted) {
  sum.key_sum += v.key_sum;
  sum.count += v.count;
  if (ctx.exact) sum.exact = ctx.sets.Merge(sum.exact, v.exact);
  sum.bits = StableHasher::Mix(sum.bits * 0x9e3779b97f4a7c15ull + v.bits + (fp32 ? 1u : 0u));
  if (shifted) sum.flags |= kShifted;
}
// Adds `chunk` to `acc`, in the order called. The usual add after the
// first (symbolic data, one piece over the whole chunk, a sum of one
// segment: every peer of a Lamport poll but the first) is inline; the
// first add and the rest are AccumulatorAddSlow's.
inline void AccumulatorAdd(SimContext& ctx, Accumulator& acc, const SimChunk& chunk) {
  if (!ctx.numeric_mode && !acc.empty && chunk.pieces.size() == 1 && chunk.len > 0 &&
      chunk.pieces.front().len == chunk.len && acc.segments.size() == 1 && acc.len > 0) {
    const Piece& p = chunk.pieces.front();
    AddToSum(ctx, acc.segments.front().sum, p.value, acc.fp32,
             (p.value.flags & kShifted) != 0 || p.src != acc.src);
    return;
  }
  AccumulatorAddSlow(ctx, acc, chunk);
}
SimChunk AccumulatorFinish(SimContext& ctx, const Accumulator& acc);

// SanitizeChunk (below) for a chunk that holds −0 somewhere.
void SanitizeChunkSlow(SimContext& ctx, SimChunk& chunk);
// Rewrites −0 elements to +0 (protocol::SanitizeBits) in every piece. Most
// chunks hold none (only a fault or a sum that rounds to −0 makes one): the
// test is inline, the rewrite not (a two-shot call sanitises every piece it
// pushes).
inline void SanitizeChunk(SimContext& ctx, SimChunk& chunk) {
  for (const Piece& p : chunk.pieces) {
    if ((p.value.flags & kHasNegZero) != 0) {
      SanitizeChunkSlow(ctx, chunk);
      return;
    }
  }
}

// Whether any element of `chunk` reads as the sentinel under `test`.
inline bool ChunkHasSentinel(const SimChunk& chunk, protocol::SentinelTest test, bool ftz) {
  for (const Piece& p : chunk.pieces) {
    if ((p.value.flags & kHasNegZero) != 0) return true;
    if (test == protocol::SentinelTest::kZeroAndSignbit && ftz &&
        (p.value.flags & kHasNegSubnormal) != 0) {
      return true;
    }
  }
  return false;
}

// Writes `chunk` into `runs` at [pos, pos + chunk.len).
void WriteChunk(RunList& runs, int64_t pos, const SimChunk& chunk, int64_t ready_ns, int writer);

// The check at a consumption point: `tensor` must hold, on every element, the
// sum over `expected` of their contributions at `instance`, bitwise equal to
// what the other members of `group_key` got. Reports a Finding (wrong_peer,
// mismatch or divergence) and returns false otherwise.
struct ReductionCheck {
  int rank;
  SiteRef site;
  uint64_t instance;
  std::span<const int> expected;
  uint64_t group_key;  // identifies the members that must agree bitwise
  int64_t elems;
  int64_t origin = 0;  // SimTensor::origin of the checked tensor
  // The virtual time a finding is reported at; -1: the rank's clock (a
  // run-ahead check runs when its call completes, where the rank's clock
  // has run on: SimContext::Stream).
  int64_t at_ns = -1;
};
class ReductionChecker {
 public:
  bool Check(SimContext& ctx, const ReductionCheck& check, const SimTensor& tensor);
  // What `times` checks of `tensor` (members whose results hold the same
  // runs) do, one after the other: the first decides, and the others, which
  // find what it found, are counted without being made again.
  bool CheckSame(SimContext& ctx, const ReductionCheck& check, const SimTensor& tensor,
                 uint32_t times);

 private:
  // The first member's output digest per origin: members that keep other
  // rows of one reduction (attention DP's return to each rank's rows) agree
  // only with the members that keep the same rows.
  struct FirstOutput {
    int64_t origin = 0;
    uint64_t digest = 0;
    int rank = -1;
  };
  // Numeric mode: the double-precision sum of every contribution's elements
  // [origin, origin + elems) and the sum of their magnitudes, computed by the
  // first member that checks that slice, reused by the others.
  struct NumericReference {
    int64_t origin = 0;
    int64_t elems = 0;
    std::vector<double> sum, magnitude;
  };
  struct Agreement {
    uint64_t expected_sum = 0;  // sum of the expected contribution keys
    absl::InlinedVector<FirstOutput, 2> firsts;
    std::vector<NumericReference> references;
    size_t checked = 0;
  };
  // (instance, group_key) -> its agreement in pool_; erased once every
  // expected member has checked in, the agreement kept in free_ for the next
  // call. (An absl::flat_hash_map of agreements, one built and destroyed in
  // it per call, cost ~70 of the NCCL row's ~2 400 instructions a rank-call:
  // docs/PERFORMANCE.md, fifteenth session.)
  MixedKeyIndex open_;  // key: Mix(instance, group)
  std::vector<Agreement> pool_;
  std::vector<uint32_t> free_;
  uint64_t OutputDigest(const SimContext& ctx, const SimTensor& tensor) const;
  // Numeric mode: `tensor`'s kept elements against the double-precision
  // reference, within tolerance. False: a finding was reported.
  bool CheckNumeric(SimContext& ctx, const ReductionCheck& c, const SimTensor& tensor,
                    Agreement& agreement);
};

// "0-2,4-7" for a sorted rank list.
std::string RankRanges(std::span<const int> ranks);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_DATA_H_
