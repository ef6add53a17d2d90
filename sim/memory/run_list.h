// Simulated memory as a sorted list of runs: each run is a range of elements
// holding one SimValue (or, outside every run, the −0 sentinel). Ranks that
// agree on layouts write and read whole runs; ranks that disagree split and
// overlap them, and the reader sees exactly the mixture it would on a GPU.

#ifndef LOCKSTEP_SIM_MEMORY_RUN_LIST_H_
#define LOCKSTEP_SIM_MEMORY_RUN_LIST_H_

#include <cstdint>
#include <memory>

#include "absl/base/attributes.h"
#include "sim/memory/small_vector.h"
#include "sim/memory/value.h"

namespace lockstep {

struct Run {
  int64_t begin = 0;
  int64_t end = 0;
  SimValue value;
  int64_t src = 0;       // element of `value` stored at `begin`
  int64_t ready_ns = 0;  // virtual time the write lands
  int32_t writer = -1;   // global rank that wrote it
};
// A Run is relocated with memcpy (a SimValue is).
template <>
struct IsTriviallyRelocatable<Run> : IsTriviallyRelocatable<SimValue> {};

class RunList {
 public:
  using Runs = SmallVector<Run>;

  RunList() = default;
  // `other`'s runs, shared (not copied) until either list is written: an
  // all-gather gives every member of a group the same rows, which copied
  // would cost the group the square of its width.
  static RunList SharedWith(RunList& other);

  // Stores `run`, overwriting whatever overlapped it. A run after every run
  // of a list of its own (an input made, a collective's result written, a
  // two-shot result gathered owner by owner) is appended inline: out of line
  // it cost ~45 instructions, twice in every rank-call of sim_bench's NCCL
  // row.
  void Write(const Run& run) {
    if (shared_ == nullptr && run.begin < run.end &&
        (runs_.empty() || runs_.back().end <= run.begin)) {
      runs_.push_back(run);
      return;
    }
    WriteSlow(run);
  }
  // Returns [begin, end) to the sentinel.
  void Clear(int64_t begin, int64_t end);
  // Whether [begin, end) is entirely covered by runs.
  bool Covered(int64_t begin, int64_t end) const {
    const Runs& list = runs();
    // Most tensors are one run over all of them.
    if (list.size() == 1 && list[0].begin <= begin && list[0].end >= end) return true;
    return FirstGap(begin, end) == end;
  }
  // Appends the pieces covering [begin, end) to `out` (gaps are skipped) and
  // returns whether they cover it entirely; `*ready_ns` gets the latest
  // ready time among them.
  bool Read(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns = nullptr) const;
  // The first element of [begin, end) not covered by a run, or `end`.
  int64_t FirstGap(int64_t begin, int64_t end) const;
  // Keeps the list's storage (SmallVector::clear does): a buffer reset every
  // call and written in pieces again, as a custom all-reduce's staging buffer
  // is, would otherwise allocate on every call.
  // (Always inline: a collective's result is reset for every member it
  // writes, and link-time optimisation stopped inlining it once the
  // completion's rare paths moved out of line.)
  ABSL_ATTRIBUTE_ALWAYS_INLINE void Reset() {
    runs_.clear();
    shared_.reset();
  }
  // Room for `n` runs before the list next allocates (a two-shot result is
  // written as a run per owner: grown one doubling at a time, a 72-wide
  // call's result reallocated seven times). A shared list is left as it is:
  // the write that copies it out sizes the copy. (Not through Mutable: a
  // third caller made the compiler stop inlining it into Write, which cost
  // the NCCL row of sim_bench 4 %.)
  void Reserve(size_t n) {
    if (shared_ == nullptr) runs_.reserve(n);
  }
  const Runs& runs() const { return shared_ != nullptr ? *shared_ : runs_; }
  // Index into runs() of the first run whose end > pos.
  size_t FirstEndingAfter(int64_t pos) const;

 private:
  // Write's every other case.
  void WriteSlow(const Run& run);
  // The runs to write: a shared list is copied out first.
  Runs& Mutable();
  Runs runs_;
  std::shared_ptr<const Runs> shared_;  // set: the runs, shared with other lists
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_RUN_LIST_H_
