#include "sim/memory/lamport_buffer.h"

#include <algorithm>

namespace lockstep {

void LamportBuffer::Spill() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (present_[i] != 0) runs_.Write(slots_[i]);
  }
  std::fill(present_.begin(), present_.end(), uint8_t{0});
  used_ = 0;
  general_ = true;
}

void LamportBuffer::Write(const Run& run) {
  if (!general_) {
    const int64_t len = run.end - run.begin;
    if (used_ == 0 && len > 0 && run.begin % len == 0) slot_len_ = len;
    if (len == slot_len_ && run.begin % len == 0) {
      const auto index = static_cast<size_t>(run.begin / len);
      if (index >= slots_.size()) {
        slots_.resize(index + 1);
        present_.resize(index + 1, 0);
      }
      if (present_[index] == 0) {
        present_[index] = 1;
        ++used_;
      }
      slots_[index] = run;
      return;
    }
    Spill();
  }
  runs_.Write(run);
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
  for (int64_t slot = begin / slot_len_; slot * slot_len_ < end; ++slot) {
    const auto i = static_cast<size_t>(slot);
    if (i >= slots_.size() || present_[i] == 0) {
      covered = false;
      continue;
    }
    const Run& r = slots_[i];
    const int64_t lo = std::max(begin, r.begin);
    const int64_t hi = std::min(end, r.end);
    out.pieces.push_back(Piece{r.value, r.src + (lo - r.begin), hi - lo});
    *ready_ns = std::max(*ready_ns, r.ready_ns);
  }
  return covered;
}

}  // namespace lockstep
