// One receive buffer of a simulated fusion workspace.
//
// Lamport calls push and poll whole slots of one size, so the common case is a
// table of slots: a push, a poll and a clear of a slot are O(1). The first
// write or clear that does not fit the table (ranks that disagree on the slot
// size, a clear that cuts a slot) moves the buffer to a general RunList, which
// models every overlap exactly; once the buffer is empty again it returns to
// the slot table. Both forms give the same answers; only the cost differs.

#ifndef LOCKSTEP_SIM_MEMORY_LAMPORT_BUFFER_H_
#define LOCKSTEP_SIM_MEMORY_LAMPORT_BUFFER_H_

#include <cstdint>
#include <vector>

#include "sim/memory/run_list.h"

namespace lockstep {

class LamportBuffer {
 public:
  void Write(const Run& run);
  void Clear(int64_t begin, int64_t end);
  // As RunList::Read: appends the pieces of [begin, end), returns coverage.
  bool Read(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns) const;
  bool Empty() const { return general_ ? runs_.runs().empty() : used_ == 0; }
  // Whether the buffer left the slot table (for tests).
  bool general() const { return general_; }

 private:
  void Spill();

  bool general_ = false;
  int64_t slot_len_ = 0;          // 0: not chosen yet
  std::vector<Run> slots_;        // slot i covers [i * slot_len_, (i + 1) * slot_len_)
  std::vector<uint8_t> present_;  // whether slot i holds data
  int64_t used_ = 0;              // slots present
  RunList runs_;                  // the general form
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_LAMPORT_BUFFER_H_
