// One 32-bit word per thread block of a kernel's grid, where every update adds
// to the words of the first `n` blocks: the custom all-reduce v2's per-block
// arrival words and window counters (sim/memory/custom_allreduce_memory.h).
//
// A call's grid runs blocks [0, blocks) and each of them adds the same amount
// to its own word, so the words form a step function of the block index that
// changes only where some call's grid ended. It is kept as those steps: one
// per distinct grid size seen (one in a run whose ranks agree on the grid),
// not one word per block (64 on H200, 96 or 148 on GB200), which every
// arrival and every barrier test walked.

#ifndef LOCKSTEP_SIM_MEMORY_BLOCK_WORDS_H_
#define LOCKSTEP_SIM_MEMORY_BLOCK_WORDS_H_

#include <algorithm>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"

namespace lockstep {

class BlockWords {
 public:
  // Adds `delta` (modulo 2^32, as the device's unsigned words wrap) to the
  // words of blocks [0, blocks). Nothing for blocks <= 0.
  void AddToFirst(int32_t blocks, uint32_t delta) {
    if (blocks <= 0) return;
    auto it = std::lower_bound(steps_.begin(), steps_.end(), blocks,
                               [](const Step& s, int32_t b) { return s.blocks < b; });
    if (it != steps_.end() && it->blocks == blocks) {
      it->delta += delta;
    } else {
      steps_.insert(it, Step{blocks, delta});
    }
  }

  // Block `block`'s word: the sum of the updates whose grid covered it (0 for
  // a block no grid reached).
  uint32_t At(int32_t block) const {
    uint32_t word = 0;
    for (const Step& s : steps_) {
      if (s.blocks > block) word += s.delta;
    }
    return word;
  }

  // The blocks of [0, blocks) where this word or `other`'s may change, in
  // ascending order, starting with 0: between two consecutive ones (and from
  // the last to `blocks`) both are constant. `f` returns false to stop;
  // returns false if it did.
  bool ForEachSegmentStart(const BlockWords& other, int32_t blocks,
                           absl::FunctionRef<bool(int32_t)> f) const {
    if (blocks <= 0) return true;
    if (!f(0)) return false;
    // Merge the two sorted lists of grid ends below `blocks`.
    auto a = steps_.begin();
    auto b = other.steps_.begin();
    int32_t last = 0;
    while (true) {
      while (a != steps_.end() && a->blocks <= last) ++a;
      while (b != other.steps_.end() && b->blocks <= last) ++b;
      int32_t next = blocks;
      if (a != steps_.end()) next = std::min(next, a->blocks);
      if (b != other.steps_.end()) next = std::min(next, b->blocks);
      if (next >= blocks) return true;
      if (!f(next)) return false;
      last = next;
    }
  }

 private:
  struct Step {
    int32_t blocks;  // the grid end: blocks [0, blocks) got `delta`
    uint32_t delta;
  };
  absl::InlinedVector<Step, 2> steps_;  // by `blocks`, ascending, distinct
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_BLOCK_WORDS_H_
