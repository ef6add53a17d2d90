#include "sim/memory/lamport_buffer.h"

#include <algorithm>
#include <limits>

namespace lockstep {

void LamportBuffer::FillNumeric(Slot& slot, const SimValue& value) {
  const auto i = static_cast<size_t>(&slot - slots_.data());
  slot.numeric = value.numeric != nullptr || value.numeric_base != 0;
  if (!slot.numeric) {
    numeric_[i] = NumericPart{};  // the array the slot held before goes
    return;
  }
  if (numeric_.size() < slots_.size()) numeric_.resize(slots_.size());
  numeric_[i] = NumericPart{value.numeric, value.numeric_base};
}

void LamportBuffer::AssignNumeric(size_t i, SimValue& out) const {
  if (slots_[i].numeric) {
    out.numeric = numeric_[i].numeric;
    out.numeric_base = numeric_[i].numeric_base;
  } else {
    out.numeric = nullptr;
    out.numeric_base = 0;
  }
}

Run LamportBuffer::RunOf(size_t i) const {
  const Slot& s = slots_[i];
  Run r;
  r.begin = static_cast<int64_t>(i) * slot_len_;
  r.end = r.begin + slot_len_;
  AssignValue(i, r.value);
  r.src = s.src;
  r.ready_ns = s.ready_ns;
  r.writer = s.writer;
  return r;
}

void LamportBuffer::Spill() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (present_[i] == 0) continue;
    if (Multi(i)) {
      for (const Run& r : multi_[i]) runs_.Write(r);
      multi_[i].clear();
    } else {
      runs_.Write(RunOf(i));
    }
  }
  std::fill(present_.begin(), present_.end(), uint8_t{0});
  used_ = 0;
  general_ = true;
}

void LamportBuffer::SetSlotLen(int64_t len) {
  slot_len_ = len;
  // ceil(2^64 / len); len = 1 (whose inverse overflows) divides.
  slot_inverse_ = len > 1 && len < (int64_t{1} << 32)
                      ? std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(len) + 1
                      : 0;
}

LamportBuffer::Slot* LamportBuffer::SlotFor(int64_t begin, int64_t len) {
  if (general_) return nullptr;
  if (used_ == 0 && len != slot_len_ && begin % len == 0) SetSlotLen(len);
  size_t index = 0;
  if (len == slot_len_ && SlotStart(begin, &index)) {
    if (index >= slots_.size()) {
      slots_.resize(index + 1);
      present_.resize(index + 1, 0);
      if (!multi_.empty()) multi_.resize(index + 1);
      if (!numeric_.empty()) numeric_.resize(index + 1);
    }
    // A write of one run: whatever several runs the slot held are gone.
    if (!multi_.empty()) multi_[index].clear();
    if (present_[index] == 0) {
      present_[index] = 1;
      ++used_;
    }
    return &slots_[index];
  }
  Spill();
  return nullptr;
}

// An empty write changes nothing in either form (RunList::Write ignores it).
void LamportBuffer::Write(const Run& run) {
  if (run.begin >= run.end) return;
  if (Slot* slot = SlotFor(run.begin, run.end - run.begin)) {
    Fill(*slot, run.value, run.src, run.ready_ns, run.writer);
    return;
  }
  runs_.Write(run);
}

void LamportBuffer::WriteSlow(int64_t begin, const Piece& piece, int64_t ready_ns, int32_t writer) {
  if (piece.len <= 0) return;
  if (Slot* slot = SlotFor(begin, piece.len)) {
    Fill(*slot, piece.value, piece.src, ready_ns, writer);
    return;
  }
  runs_.Write(Run{begin, begin + piece.len, piece.value, piece.src, ready_ns, writer});
}

void LamportBuffer::WritePieces(int64_t begin, const SimChunk& chunk, int64_t ready_ns,
                                int32_t writer) {
  // Empty pieces write nothing (RunList::Write ignores an empty run).
  int64_t len = 0;
  int nonempty = 0;
  for (const Piece& p : chunk.pieces) {
    if (p.len <= 0) continue;
    len += p.len;
    ++nonempty;
  }
  if (nonempty <= 1) {
    int64_t at = begin;
    for (const Piece& p : chunk.pieces) {
      Write(at, p, ready_ns, writer);
      at += p.len;
    }
    return;
  }
  Slot* slot = SlotFor(begin, len);
  std::vector<Run>* runs = nullptr;
  if (slot != nullptr) {
    const auto index = static_cast<size_t>(slot - slots_.data());
    if (multi_.empty()) multi_.resize(slots_.size());
    runs = &multi_[index];  // emptied by SlotFor
    runs->reserve(static_cast<size_t>(nonempty));
  }
  int64_t at = begin;
  for (const Piece& p : chunk.pieces) {
    if (p.len > 0) {
      const Run r{at, at + p.len, p.value, p.src, ready_ns, writer};
      if (runs != nullptr) {
        runs->push_back(r);
      } else {
        runs_.Write(r);
      }
    }
    at += p.len;
  }
}

void LamportBuffer::Clear(int64_t begin, int64_t end) {
  if (begin >= end) return;
  if (!general_) {
    if (used_ == 0) return;
    // Slots cut by the range move the buffer to the general form.
    const int64_t first = begin / slot_len_;
    const int64_t last = (end - 1) / slot_len_;
    auto cut = [&](int64_t slot) {
      return slot >= 0 && static_cast<size_t>(slot) < slots_.size() &&
             present_[static_cast<size_t>(slot)] != 0;
    };
    if ((begin % slot_len_ != 0 && cut(first)) || (end % slot_len_ != 0 && cut(last))) {
      Spill();
    } else {
      const size_t hi = std::min(slots_.size(), static_cast<size_t>(last) + 1);
      for (size_t i = static_cast<size_t>(first); i < hi; ++i) {
        if (present_[i] != 0) {
          present_[i] = 0;
          --used_;
        }
      }
      return;
    }
  }
  runs_.Clear(begin, end);
  if (runs_.runs().empty()) {
    general_ = false;
    slot_len_ = 0;
  }
}

bool LamportBuffer::Read(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns) const {
  if (general_) return runs_.Read(begin, end, out, ready_ns);
  out.len = end - begin;
  *ready_ns = 0;
  if (used_ == 0) return false;
  bool covered = true;
  for (auto slot = static_cast<int64_t>(SlotOf(begin)); slot * slot_len_ < end; ++slot) {
    const auto i = static_cast<size_t>(slot);
    if (i >= slots_.size() || present_[i] == 0) {
      covered = false;
      continue;
    }
    if (Multi(i)) {
      for (const Run& r : multi_[i]) {
        const int64_t lo = std::max(begin, r.begin);
        const int64_t hi = std::min(end, r.end);
        if (hi <= lo) continue;  // a run of a slot the range only cuts
        out.pieces.push_back(Piece{r.value, r.src + (lo - r.begin), hi - lo});
        *ready_ns = std::max(*ready_ns, r.ready_ns);
      }
      continue;
    }
    out.pieces.push_back(PieceOf(i, begin, end));
    *ready_ns = std::max(*ready_ns, slots_[i].ready_ns);
  }
  return covered;
}

bool LamportBuffer::ReadFreshSlow(int64_t begin, int64_t end, SimChunk& out,
                                  int64_t* ready_ns) const {
  // One whole slot, present, into a value of other than one piece.
  size_t i = 0;
  if (PresentSlot(begin, end, &i)) {
    out.pieces.clear();
    out.pieces.push_back(PieceOf(i, begin, end));
    out.len = slot_len_;
    *ready_ns = std::max<int64_t>(0, slots_[i].ready_ns);
    return true;
  }
  // Emptied with its storage kept (SmallVector::clear keeps it): a slot of
  // several runs fills it again at every poll.
  out.pieces.clear();
  return Read(begin, end, out, ready_ns);
}

}  // namespace lockstep
