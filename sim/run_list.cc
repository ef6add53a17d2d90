#include "sim/run_list.h"

#include <algorithm>

namespace lockstep {

size_t RunList::FirstEndingAfter(int64_t pos) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), pos,
                             [](int64_t p, const Run& r) { return p < r.end; });
  return static_cast<size_t>(it - runs_.begin());
}

void RunList::Clear(int64_t begin, int64_t end) {
  if (begin >= end || runs_.empty()) return;
  size_t i = FirstEndingAfter(begin);
  // Fast path: clearing everything.
  if (i == 0 && begin <= runs_.front().begin && end >= runs_.back().end) {
    runs_.clear();
    return;
  }
  std::vector<Run> kept;
  size_t j = i;
  for (; j < runs_.size() && runs_[j].begin < end; ++j) {
    const Run& r = runs_[j];
    if (r.begin < begin) {
      Run left = r;
      left.end = begin;
      kept.push_back(left);
    }
    if (r.end > end) {
      Run right = r;
      right.src += end - r.begin;
      right.begin = end;
      kept.push_back(right);
    }
  }
  runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(i),
              runs_.begin() + static_cast<std::ptrdiff_t>(j));
  runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i), kept.begin(), kept.end());
}

void RunList::Write(const Run& run) {
  if (run.begin >= run.end) return;
  // Fast path: appending past the last run.
  if (runs_.empty() || runs_.back().end <= run.begin) {
    runs_.push_back(run);
    return;
  }
  Clear(run.begin, run.end);
  auto it = std::lower_bound(runs_.begin(), runs_.end(), run.begin,
                             [](const Run& r, int64_t p) { return r.begin < p; });
  runs_.insert(it, run);
}

bool RunList::Covered(int64_t begin, int64_t end) const { return FirstGap(begin, end) == end; }

int64_t RunList::FirstGap(int64_t begin, int64_t end) const {
  int64_t pos = begin;
  for (size_t i = FirstEndingAfter(begin); i < runs_.size() && pos < end; ++i) {
    if (runs_[i].begin > pos) return pos;
    pos = runs_[i].end;
  }
  return pos < end ? pos : end;
}

int64_t RunList::Read(int64_t begin, int64_t end, SimChunk& out) const {
  int64_t ready = 0;
  for (size_t i = FirstEndingAfter(begin); i < runs_.size() && runs_[i].begin < end; ++i) {
    const Run& r = runs_[i];
    const int64_t lo = std::max(begin, r.begin);
    const int64_t hi = std::min(end, r.end);
    out.pieces.push_back(Piece{r.value, r.src + (lo - r.begin), hi - lo});
    ready = std::max(ready, r.ready_ns);
  }
  out.len = end - begin;
  return ready;
}

}  // namespace lockstep
