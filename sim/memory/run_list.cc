#include "sim/memory/run_list.h"

#include <algorithm>

namespace lockstep {

size_t RunList::FirstEndingAfter(int64_t pos) const {
  // Buffers hold a run per writer: a few dozen at most, where a forward scan
  // beats a binary search.
  size_t i = 0;
  const size_t n = runs_.size();
  if (n > 32) {
    return static_cast<size_t>(std::upper_bound(runs_.begin(), runs_.end(), pos,
                                                [](int64_t p, const Run& r) { return p < r.end; }) -
                               runs_.begin());
  }
  while (i < n && runs_[i].end <= pos) ++i;
  return i;
}

void RunList::Clear(int64_t begin, int64_t end) {
  if (begin >= end || runs_.empty()) return;
  if (begin <= runs_.front().begin && end >= runs_.back().end) {
    runs_.clear();
    return;
  }
  const size_t i = FirstEndingAfter(begin);
  size_t j = i;
  while (j < runs_.size() && runs_[j].begin < end) ++j;
  if (i == j) return;
  // At most two pieces survive: the part of runs_[i] before `begin` and the
  // part of runs_[j - 1] after `end`.
  Run left = runs_[i];
  Run right = runs_[j - 1];
  const bool keep_left = left.begin < begin;
  const bool keep_right = right.end > end;
  runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(i),
              runs_.begin() + static_cast<std::ptrdiff_t>(j));
  size_t at = i;
  if (keep_left) {
    left.end = begin;
    runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(at++), left);
  }
  if (keep_right) {
    right.src += end - right.begin;
    right.begin = end;
    runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(at), right);
  }
}

void RunList::Write(const Run& run) {
  if (run.begin >= run.end) return;
  if (runs_.empty() || runs_.back().end <= run.begin) {
    runs_.push_back(run);
    return;
  }
  const size_t i = FirstEndingAfter(run.begin);
  // Fast path: the run falls in a gap (the slot was cleared), or replaces a
  // run of exactly the same range.
  if (i == runs_.size() || runs_[i].begin >= run.end) {
    runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i), run);
    return;
  }
  if (runs_[i].begin == run.begin && runs_[i].end == run.end) {
    runs_[i] = run;
    return;
  }
  Clear(run.begin, run.end);
  runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(FirstEndingAfter(run.begin)), run);
}

int64_t RunList::FirstGap(int64_t begin, int64_t end) const {
  int64_t pos = begin;
  for (size_t i = FirstEndingAfter(begin); i < runs_.size() && pos < end; ++i) {
    if (runs_[i].begin > pos) return pos;
    pos = runs_[i].end;
  }
  return pos < end ? pos : end;
}

bool RunList::Read(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns) const {
  out.len = end - begin;
  if (runs_.size() == 1 && runs_[0].begin <= begin && runs_[0].end >= end) {
    const Run& r = runs_[0];
    out.pieces.push_back(Piece{r.value, r.src + (begin - r.begin), end - begin});
    if (ready_ns != nullptr) *ready_ns = r.ready_ns;
    return true;
  }
  int64_t ready = 0;
  int64_t pos = begin;
  bool covered = true;
  for (size_t i = FirstEndingAfter(begin); i < runs_.size() && runs_[i].begin < end; ++i) {
    const Run& r = runs_[i];
    if (r.begin > pos) covered = false;
    const int64_t lo = std::max(begin, r.begin);
    const int64_t hi = std::min(end, r.end);
    out.pieces.push_back(Piece{r.value, r.src + (lo - r.begin), hi - lo});
    ready = std::max(ready, r.ready_ns);
    pos = hi;
  }
  out.len = end - begin;
  if (ready_ns != nullptr) *ready_ns = ready;
  return covered && pos >= end;
}

}  // namespace lockstep
