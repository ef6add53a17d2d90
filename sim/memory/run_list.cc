#include "sim/memory/run_list.h"

#include <algorithm>

namespace lockstep {

RunList RunList::SharedWith(RunList& other) {
  if (other.shared_ == nullptr) {
    other.shared_ = std::make_shared<const Runs>(std::move(other.runs_));
    other.runs_.clear();
  }
  RunList out;
  out.shared_ = other.shared_;
  return out;
}

RunList::Runs& RunList::Mutable() {
  if (shared_ != nullptr) {
    runs_ = *shared_;
    shared_.reset();
  }
  return runs_;
}

size_t RunList::FirstEndingAfter(int64_t pos) const {
  // Buffers hold a run per writer: a few dozen at most, where a forward scan
  // beats a binary search.
  const Runs& runs = this->runs();
  size_t i = 0;
  const size_t n = runs.size();
  if (n > 32) {
    return static_cast<size_t>(std::upper_bound(runs.begin(), runs.end(), pos,
                                                [](int64_t p, const Run& r) { return p < r.end; }) -
                               runs.begin());
  }
  while (i < n && runs[i].end <= pos) ++i;
  return i;
}

namespace {

// list[i, j) (j > i) are the runs that overlap [begin, end). Replaces them by
// what survives of them outside it, the part of list[i] before `begin` and
// the part of list[j - 1] after `end`, around `with` (null: nothing), moving
// the runs after them once: a write into the middle of a run, which every
// shard of a two-shot all-reduce is, cost an erase and three inserts.
void Splice(RunList::Runs& list, size_t i, size_t j, int64_t begin, int64_t end, const Run* with) {
  const bool keep_right = list[j - 1].end > end;
  Run right;
  if (keep_right) {
    right = list[j - 1];
    right.src += end - right.begin;
    right.begin = end;
  }
  size_t at = i;
  if (list[i].begin < begin) {
    list[i].end = begin;  // the left survivor, in place
    ++at;
  }
  const size_t need = (with != nullptr ? size_t{1} : 0) + (keep_right ? size_t{1} : 0);
  const size_t have = j - at;
  const auto pos = [&](size_t k) { return list.begin() + static_cast<std::ptrdiff_t>(k); };
  if (have > need) {
    list.erase(pos(at + need), pos(j));
  } else if (have < need) {
    list.insert(pos(at), need - have, Run{});
  }
  if (with != nullptr) list[at++] = *with;
  if (keep_right) list[at] = std::move(right);
}

}  // namespace

void RunList::Clear(int64_t begin, int64_t end) {
  if (begin >= end || runs().empty()) return;
  if (begin <= runs().front().begin && end >= runs().back().end) {
    Reset();
    return;
  }
  Runs& list = Mutable();
  const size_t i = FirstEndingAfter(begin);
  size_t j = i;
  while (j < list.size() && list[j].begin < end) ++j;
  if (i == j) return;
  Splice(list, i, j, begin, end, nullptr);
}

void RunList::WriteSlow(const Run& run) {
  if (run.begin >= run.end) return;
  Runs& list = Mutable();
  if (list.empty() || list.back().end <= run.begin) {
    list.push_back(run);
    return;
  }
  const size_t i = FirstEndingAfter(run.begin);
  // Fast path: the run falls in a gap (the slot was cleared), or replaces a
  // run of exactly the same range.
  if (i == list.size() || list[i].begin >= run.end) {
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(i), run);
    return;
  }
  if (list[i].begin == run.begin && list[i].end == run.end) {
    list[i] = run;
    return;
  }
  size_t j = i + 1;
  while (j < list.size() && list[j].begin < run.end) ++j;
  Splice(list, i, j, run.begin, run.end, &run);
}

int64_t RunList::FirstGap(int64_t begin, int64_t end) const {
  const Runs& list = runs();
  int64_t pos = begin;
  for (size_t i = FirstEndingAfter(begin); i < list.size() && pos < end; ++i) {
    if (list[i].begin > pos) return pos;
    pos = list[i].end;
  }
  return pos < end ? pos : end;
}

namespace {

// Appends run `r`'s elements [lo, hi) to `out`, built in place.
void AppendPiece(SimChunk& out, const Run& r, int64_t lo, int64_t hi) {
  Piece& p = out.pieces.emplace_back();
  p.value = r.value;
  p.src = r.src + (lo - r.begin);
  p.len = hi - lo;
}

}  // namespace

bool RunList::Read(int64_t begin, int64_t end, SimChunk& out, int64_t* ready_ns) const {
  const Runs& list = runs();
  out.len = end - begin;
  // The usual read lies inside one run: of a tensor of one run, or of a few
  // (a two-shot call reads each owner's range of a rank's rows among zeros).
  const size_t first = list.size() == 1 && list[0].end > begin ? 0 : FirstEndingAfter(begin);
  if (first < list.size() && list[first].begin <= begin && list[first].end >= end) {
    const Run& r = list[first];
    AppendPiece(out, r, begin, end);
    if (ready_ns != nullptr) *ready_ns = r.ready_ns;
    return true;
  }
  int64_t ready = 0;
  int64_t pos = begin;
  bool covered = true;
  for (size_t i = first; i < list.size() && list[i].begin < end; ++i) {
    const Run& r = list[i];
    if (r.begin > pos) covered = false;
    const int64_t lo = std::max(begin, r.begin);
    const int64_t hi = std::min(end, r.end);
    AppendPiece(out, r, lo, hi);
    ready = std::max(ready, r.ready_ns);
    pos = hi;
  }
  out.len = end - begin;
  if (ready_ns != nullptr) *ready_ns = ready;
  return covered && pos >= end;
}

}  // namespace lockstep
