// One receive buffer of a simulated fusion workspace.
//
// Lamport calls push and poll whole slots of one size, so the common case is a
// table of slots: a push, a poll and a clear of a slot are O(1). A push is one
// run, or several where the pushed data is (rows of different sources, as an
// attention-DP batch's are): the slot then holds the push's runs. The first
// write or clear that does not fit the table (ranks that disagree on the slot
// size, a clear that cuts a slot) moves the buffer to a general RunList, which
// models every overlap exactly; once the buffer is empty again it returns to
// the slot table. Both forms give the same answers; only the cost differs.
//
// A slot of the table is 48 bytes, not a Run's 96: its range is its index's,
// and a value's numeric data (numeric mode's arrays) sits apart, in a table
// of its own made at the first numeric write. A 72-wide MNNVL call lands a
// push in 72 peers' buffers and polls 72 slots per rank, each most likely
// out of the core's L2 by then: a slot of two cache lines cost two misses
// where one will do (docs/PERFORMANCE.md, eighteenth session).

#ifndef LOCKSTEP_SIM_MEMORY_LAMPORT_BUFFER_H_
#define LOCKSTEP_SIM_MEMORY_LAMPORT_BUFFER_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/memory/run_list.h"

namespace lockstep {

class LamportBuffer {
 public:
  void Write(const Run& run);
  // Write(Run{begin, begin + piece.len, piece.value, piece.src, ready_ns,
  // writer}), without building the run first (a push's store). The usual
  // push, into a slot the table already has, is inline; the rest is not.
  void Write(int64_t begin, const Piece& piece, int64_t ready_ns, int32_t writer) {
    if (piece.len > 0) {
      if (Slot* slot = TableSlot(begin, piece.len)) {
        Fill(*slot, piece.value, piece.src, ready_ns, writer);
        return;
      }
    }
    WriteSlow(begin, piece, ready_ns, writer);
  }
  // The pieces of `chunk` written one after another from `begin` (a push's
  // store): one slot of the table when together they fill one.
  void Write(int64_t begin, const SimChunk& chunk, int64_t ready_ns, int32_t writer) {
    if (chunk.pieces.size() == 1) {
      Write(begin, chunk.pieces.front(), ready_ns, writer);
    } else {
      WritePieces(begin, chunk, ready_ns, writer);
    }
  }
  void Clear(int64_t begin, int64_t end);
  // As RunList::Read: appends the pieces of [begin, end), returns coverage.
  bool Read(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns) const;
  // Read into an emptied `out` (a poll's value, reused from peer to peer:
  // a single piece is overwritten in place). The usual poll, one whole slot
  // present into a value of one piece, is inline; the rest is not.
  bool ReadFresh(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns) const {
    size_t i = 0;
    if (out.pieces.size() == 1 && PresentSlot(begin, end, &i)) {
      const Slot& r = slots_[i];
      Piece& p = out.pieces.front();
      AssignValue(i, p.value);
      p.src = r.src;
      p.len = slot_len_;
      out.len = slot_len_;
      *ready_ns = std::max<int64_t>(0, r.ready_ns);
      return true;
    }
    return ReadFreshSlow(begin, end, out, ready_ns);
  }
  bool Empty() const { return general_ ? runs_.runs().empty() : used_ == 0; }
  // Whether the buffer left the slot table (for tests).
  bool general() const { return general_; }

 private:
  // The one run a table slot holds: [i * slot_len_, (i + 1) * slot_len_).
  // Its value's fields but the numeric array and base, which are numeric_[i]
  // where `numeric` is set.
  struct Slot {
    uint64_t key_sum = 0;
    uint64_t bits = 0;
    int64_t src = 0;
    int64_t ready_ns = 0;
    uint32_t count = 0;
    uint32_t exact = 0;
    int32_t writer = -1;
    uint8_t flags = 0;
    bool numeric = false;
  };
  static_assert(sizeof(Slot) == 48);
  struct NumericPart {
    NumericArray numeric;
    int64_t numeric_base = 0;
  };

  void Spill();
  // Write(begin, piece, ...) and ReadFresh but for their inline cases.
  void WriteSlow(int64_t begin, const Piece& piece, int64_t ready_ns, int32_t writer);
  bool ReadFreshSlow(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns) const;
  // Write(begin, chunk, ...) of a chunk of other than one piece.
  void WritePieces(int64_t begin, const SimChunk& chunk, int64_t ready_ns, int32_t writer);

  // pos / slot_len_, pos >= 0.
  size_t SlotOf(int64_t pos) const {
    const auto n = static_cast<uint64_t>(pos);
    if (slot_inverse_ != 0 && n < (uint64_t{1} << 32)) {
      __extension__ using Wide = unsigned __int128;
      return static_cast<size_t>((static_cast<Wide>(slot_inverse_) * n) >> 64);
    }
    return static_cast<size_t>(pos / slot_len_);
  }
  // Whether `pos` is a slot's first element; its slot in `*index`.
  bool SlotStart(int64_t pos, size_t* index) const {
    *index = SlotOf(pos);
    return static_cast<int64_t>(*index) * slot_len_ == pos;
  }
  void SetSlotLen(int64_t len);
  // `slot` holds a run of `value` from its element `src`, landing at
  // `ready_ns`, written by `writer`.
  void Fill(Slot& slot, const SimValue& value, int64_t src, int64_t ready_ns, int32_t writer) {
    slot.key_sum = value.key_sum;
    slot.bits = value.bits;
    slot.src = src;
    slot.ready_ns = ready_ns;
    slot.count = value.count;
    slot.exact = value.exact;
    slot.writer = writer;
    slot.flags = value.flags;
    if (value.numeric != nullptr || value.numeric_base != 0 || slot.numeric) [[unlikely]] {
      FillNumeric(slot, value);
    }
  }
  // Fill's numeric half: numeric_[slot's index] holds `value`'s array and
  // base, or lets go of the array the slot held before.
  void FillNumeric(Slot& slot, const SimValue& value);
  // `out` = slot i's value.
  void AssignValue(size_t i, SimValue& out) const {
    const Slot& r = slots_[i];
    out.key_sum = r.key_sum;
    out.count = r.count;
    out.exact = r.exact;
    out.bits = r.bits;
    out.flags = r.flags;
    if (r.numeric || out.numeric != nullptr || out.numeric_base != 0) [[unlikely]] {
      AssignNumeric(i, out);
    }
  }
  void AssignNumeric(size_t i, SimValue& out) const;
  // Slot i's run, as the general form holds it.
  Run RunOf(size_t i) const;
  // The piece of slot i's run within [begin, end), which overlaps it. (In
  // the header: defined in the .cc file, link-time optimisation stopped
  // inlining it into the poll once the run-ahead model came in, 25 M
  // instructions of sim_bench's fused row.)
  Piece PieceOf(size_t i, int64_t begin, int64_t end) const {
    const int64_t slot_begin = static_cast<int64_t>(i) * slot_len_;
    const int64_t lo = std::max(begin, slot_begin);
    const int64_t hi = std::min(end, slot_begin + slot_len_);
    Piece p;
    AssignValue(i, p.value);
    p.src = slots_[i].src + (lo - slot_begin);
    p.len = hi - lo;
    return p;
  }
  // What SlotFor gives where the table already has the slot at this length
  // and no slot holds several runs (a push into a table in use): the slot,
  // marked present; else null, and SlotFor decides.
  Slot* TableSlot(int64_t begin, int64_t len) {
    size_t index = 0;
    if (general_ || len != slot_len_ || !multi_.empty() || !SlotStart(begin, &index) ||
        index >= slots_.size()) {
      return nullptr;
    }
    if (present_[index] == 0) {
      present_[index] = 1;
      ++used_;
    }
    return &slots_[index];
  }
  // Whether [begin, end) is one whole slot, present and of one run; its
  // index in `*index`.
  bool PresentSlot(int64_t begin, int64_t end, size_t* index) const {
    return !general_ && used_ > 0 && end - begin == slot_len_ && begin >= 0 &&
           SlotStart(begin, index) && *index < slots_.size() && present_[*index] != 0 &&
           !Multi(*index);
  }
  // The slot a write of [begin, begin + len) (len > 0) fills, marked
  // present; null once the write has moved the buffer to the general form.
  Slot* SlotFor(int64_t begin, int64_t len);
  // Whether present slot `i` holds the runs of a push of several (multi_).
  bool Multi(size_t i) const { return !multi_.empty() && !multi_[i].empty(); }

  bool general_ = false;
  int64_t slot_len_ = 0;  // 0: not chosen yet
  // pos / slot_len_ as (pos * slot_inverse_) >> 64, exact for pos and
  // slot_len_ below 2^32 (Lemire, Kaser and Kurz, "Faster remainder by direct
  // computation", 2019); 0: divide.
  uint64_t slot_inverse_ = 0;
  std::vector<Slot> slots_;       // slot i covers [i * slot_len_, (i + 1) * slot_len_)
  std::vector<uint8_t> present_;  // whether slot i holds data
  // Slot i's runs where a push of several filled it (slots_[i] unused then),
  // else empty; sized with slots_ from the first such push, empty before.
  std::vector<std::vector<Run>> multi_;
  int64_t used_ = 0;  // slots present
  // Slot i's numeric array and base where slots_[i].numeric; sized with
  // slots_ from the first slot that has them, empty before.
  std::vector<NumericPart> numeric_;
  RunList runs_;  // the general form
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_LAMPORT_BUFFER_H_
