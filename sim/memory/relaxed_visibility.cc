#include "sim/memory/relaxed_visibility.h"

#include <algorithm>
#include <functional>

namespace lockstep {

RelaxedVisibility::RelaxedVisibility(uint64_t run_seed)
    // Its own stream of the seed: the delays never shift the schedule's or
    // the data's draws.
    : rng_(run_seed ^ 0x51a7ed5107e5ull) {}

uint64_t RelaxedVisibility::Store(uint64_t step, int writer, int reader, const StoreTarget& target,
                                  std::function<void()> land) {
  uint64_t due = step + rng_.Below(kMaxDelaySteps + 1);
  if (auto f = floor_.find(writer); f != floor_.end()) due = std::max(due, f->second);
  // Coherence: not before an earlier store of this writer to the same place.
  auto& here = by_place_[PlaceOf(writer, reader, target)];
  for (uint32_t slot : here) {
    if (slots_[slot].target.Overlaps(target)) due = std::max(due, slots_[slot].due);
  }
  const uint64_t seq = next_seq_++;
  uint32_t slot = 0;
  if (free_.empty()) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  slots_[slot] = InFlight{due, seq, step, writer, reader, target, std::move(land)};
  here.push_back(slot);
  by_writer_[writer].push_back(slot);
  heap_.push_back(Due{due, seq, slot});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
  ++in_flight_;
  return seq;
}

void RelaxedVisibility::Release(int writer) {
  // Equal due steps land in the order the stores were made, so a later
  // store due at the last one's step still lands after every earlier one.
  auto w = by_writer_.find(writer);
  if (w == by_writer_.end() || w->second.empty()) return;
  uint64_t last = 0;
  for (uint32_t slot : w->second) last = std::max(last, slots_[slot].due);
  uint64_t& floor = floor_[writer];
  floor = std::max(floor, last);
}

void RelaxedVisibility::Land(uint32_t slot, bool from_writer_list) {
  InFlight& s = slots_[slot];
  if (from_writer_list) {
    std::vector<uint32_t>& mine = by_writer_[s.writer];
    auto at = std::find(mine.begin(), mine.end(), slot);
    *at = mine.back();
    mine.pop_back();
  }
  auto& here = by_place_[PlaceOf(s.writer, s.reader, s.target)];
  here.erase(std::find(here.begin(), here.end(), slot));
  // Out of its slot before it runs: landing writes memory and wakes ranks,
  // it never stores.
  std::function<void()> land = std::move(s.land);
  s.land = nullptr;
  s.seq = kLanded;
  free_.push_back(slot);
  --in_flight_;
  ++landed_;
  land();
}

void RelaxedVisibility::Flush(int writer) {
  auto w = by_writer_.find(writer);
  if (w != by_writer_.end() && !w->second.empty()) {
    std::vector<uint32_t> mine = std::move(w->second);
    w->second.clear();
    std::sort(mine.begin(), mine.end(), [this](uint32_t a, uint32_t b) {
      return slots_[a].due != slots_[b].due ? slots_[a].due < slots_[b].due
                                            : slots_[a].seq < slots_[b].seq;
    });
    for (uint32_t slot : mine) Land(slot, false);
  }
  floor_.erase(writer);
}

bool RelaxedVisibility::LandNextDue(uint64_t step, bool any_step) {
  while (!heap_.empty()) {
    const Due top = heap_.front();
    if (slots_[top.slot].seq != top.seq) {  // a flush landed it already
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
      continue;
    }
    if (!any_step && top.due > step) return false;
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
    heap_.pop_back();
    Land(top.slot, true);
    return true;
  }
  return false;
}

bool RelaxedVisibility::Deliver(uint64_t step, bool idle) {
  bool any = false;
  while (LandNextDue(step, false)) any = true;
  if (!any && idle) any = LandNextDue(step, true);
  return any;
}

const RelaxedVisibility::InFlight* RelaxedVisibility::Pending(int writer, int reader,
                                                              const StoreTarget& target) const {
  auto here = by_place_.find(PlaceOf(writer, reader, target));
  if (here == by_place_.end()) return nullptr;
  const InFlight* first = nullptr;
  for (uint32_t slot : here->second) {
    const InFlight& s = slots_[slot];
    if (s.target.Overlaps(target) && (first == nullptr || s.seq < first->seq)) first = &s;
  }
  return first;
}

std::vector<int64_t> RelaxedVisibility::Cuts(int64_t len, int64_t granule) {
  std::vector<int64_t> cuts = {0};
  const int64_t vectors = granule > 0 ? (len + granule - 1) / granule : 1;
  const uint64_t pieces = 1 + rng_.Below(static_cast<uint64_t>(
                                  std::min<int64_t>(kMaxPieces, std::max<int64_t>(vectors, 1))));
  for (uint64_t i = 1; i < pieces; ++i) {
    cuts.push_back(granule *
                   (1 + static_cast<int64_t>(rng_.Below(static_cast<uint64_t>(vectors - 1)))));
  }
  cuts.push_back(len);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

SimChunk SubChunk(const SimChunk& chunk, int64_t begin, int64_t end) {
  SimChunk out;
  out.len = end - begin;
  int64_t at = 0;
  for (const Piece& p : chunk.pieces) {
    const int64_t lo = std::max(begin, at);
    const int64_t hi = std::min(end, at + p.len);
    if (lo < hi) out.pieces.push_back(Piece{p.value, p.src + (lo - at), hi - lo});
    at += p.len;
  }
  return out;
}

void CoalescePieces(SimChunk& chunk) {
  if (chunk.pieces.size() < 2) return;
  size_t kept = 0;
  for (size_t i = 1; i < chunk.pieces.size(); ++i) {
    Piece& last = chunk.pieces[kept];
    const Piece& p = chunk.pieces[i];
    if (p.src == last.src + last.len && p.value == last.value) {
      last.len += p.len;
    } else {
      chunk.pieces[++kept] = p;
    }
  }
  chunk.pieces.resize(kept + 1);
}

}  // namespace lockstep
