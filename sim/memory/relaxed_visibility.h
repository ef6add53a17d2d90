// Relaxed visibility of stores into peer memory (scenario key `memory:
// relaxed`, docs/SIMULATOR.md "Relaxed memory"). A store a rank makes into
// memory a peer reads does not reach that peer at once: it is in flight for a
// number of scheduling steps drawn from the run's seed, and stores land in the
// order of those draws, not in program order. Only what the protocol declares
// constrains it:
//   - Release(writer): every store the writer makes afterwards lands after
//     every store it made before (st.release / __threadfence_system);
//   - Flush(writer): the end of the writer's kernel, a full fence: everything
//     it stored lands now, in order;
//   - two stores of one writer to the same place land in program order
//     (coherence).
// Stores are never lost: a store lands when its delay has passed, or as soon
// as no rank can run. The same seed gives the same delays, so a run replays.

#ifndef LOCKSTEP_SIM_MEMORY_RELAXED_VISIBILITY_H_
#define LOCKSTEP_SIM_MEMORY_RELAXED_VISIBILITY_H_

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "sim/memory/value.h"
#include "sim/runtime/rng.h"

namespace lockstep {

// The memory a store writes: an object (a workspace, a custom all-reduce), a
// region of it (a buffer, a staged buffer, a flag array) and elements
// [begin, end) of that region.
struct StoreTarget {
  const void* object = nullptr;
  int64_t region = 0;
  int64_t begin = 0;
  int64_t end = 0;

  bool Overlaps(const StoreTarget& o) const {
    return object == o.object && region == o.region && begin < o.end && o.begin < end;
  }
};

class RelaxedVisibility {
 public:
  // The longest a store stays in flight, in scheduling steps.
  static constexpr uint64_t kMaxDelaySteps = 48;
  // A pushed range lands in up to this many pieces, cut at 16-byte vectors.
  static constexpr int kMaxPieces = 4;

  explicit RelaxedVisibility(uint64_t run_seed);

  // A store by global rank `writer` into `target`, read by global rank
  // `reader`, made at scheduling step `step`: `land` runs when it reaches the
  // reader. Returns the store's sequence number (for reports).
  uint64_t Store(uint64_t step, int writer, int reader, const StoreTarget& target,
                 std::function<void()> land);
  // A release fence of `writer`: each store it makes from now on lands after
  // every store it made before.
  void Release(int writer);
  // A full fence of `writer` (its kernel ended): every store it made lands
  // now, in the order they were due.
  void Flush(int writer);
  // The scheduler's pending work (Scheduler::set_pending_work): lands every
  // store due by `step`; when `idle` (no rank can run), the next store due.
  // Returns whether anything landed.
  bool Deliver(uint64_t step, bool idle);

  // A store still in flight.
  struct InFlight {
    uint64_t due = 0;   // scheduling step it lands at (at the latest)
    uint64_t seq = 0;   // order the stores were made in, from 0
    uint64_t made = 0;  // scheduling step it was made at
    int writer = -1;
    int reader = -1;
    StoreTarget target;
    std::function<void()> land;
  };
  // The first in-flight store of `writer` that `reader` would see in
  // `target`, or null (valid until the next Store).
  const InFlight* Pending(int writer, int reader, const StoreTarget& target) const;
  size_t in_flight() const { return in_flight_; }
  uint64_t landed() const { return landed_; }

  // Cuts [0, len) into 1..kMaxPieces ranges at multiples of `granule`
  // elements, drawn from the seed: the boundaries, first 0, last len.
  std::vector<int64_t> Cuts(int64_t len, int64_t granule);

  // The first load that read memory a store had not reached yet, described
  // by the memory that was read (kept for the report; the detectors judge
  // what the load's data did).
  void NoteLateRead(std::string text) {
    if (late_read_.empty()) late_read_ = std::move(text);
  }
  const std::string& late_read() const { return late_read_; }

 private:
  // Stores of one writer to one reader's region: (writer, reader, object, region).
  using Place = std::tuple<int, int, const void*, int64_t>;
  static Place PlaceOf(int writer, int reader, const StoreTarget& t) {
    return {writer, reader, t.object, t.region};
  }
  // An entry of the landing order: (due, seq) of the store in `slot`. Stores
  // that a flush landed early stay in the heap and are skipped.
  struct Due {
    uint64_t due;
    uint64_t seq;
    uint32_t slot;
    bool operator>(const Due& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  static constexpr uint64_t kLanded = ~uint64_t{0};  // seq of a free slot
  void Land(uint32_t slot, bool from_writer_list);
  bool LandNextDue(uint64_t step, bool any_step);

  Rng rng_;
  uint64_t next_seq_ = 0;
  uint64_t landed_ = 0;
  size_t in_flight_ = 0;
  // The stores, in reused slots; a min-heap of their landing order.
  std::vector<InFlight> slots_;
  std::vector<uint32_t> free_;
  std::vector<Due> heap_;
  // The same stores by writer (a release, a flush) and by place (coherence,
  // a read that got ahead): lookups only, never iterated across keys, so the
  // hash order reaches no result.
  absl::flat_hash_map<int, std::vector<uint32_t>> by_writer_;
  absl::flat_hash_map<Place, absl::InlinedVector<uint32_t, 4>> by_place_;
  // Per writer: stores made after its last Release land no earlier than this.
  absl::flat_hash_map<int, uint64_t> floor_;
  std::string late_read_;
};

// Elements [begin, end) of `chunk` (which starts at element 0).
SimChunk SubChunk(const SimChunk& chunk, int64_t begin, int64_t end);
// Joins adjacent pieces of one store that landed separately (the same value,
// consecutive source elements), so that a range read after its pieces landed
// is the range that was stored: how a store was cut never shows in a result.
void CoalescePieces(SimChunk& chunk);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_RELAXED_VISIBILITY_H_
