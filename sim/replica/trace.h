// The record of a run: one event per collective call per rank, on the virtual
// timeline, hashed as it is recorded so that two runs can be compared by one
// number; written as Chrome/Perfetto trace JSON on request.

#ifndef LOCKSTEP_SIM_REPLICA_TRACE_H_
#define LOCKSTEP_SIM_REPLICA_TRACE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "dispatch/decision.h"
#include "dispatch/group_layout.h"
#include "dispatch/stable_hash.h"
#include "nlohmann/json.hpp"
#include "sim/replica/site.h"

namespace lockstep {

struct TraceEvent {
  int32_t rank = 0;
  SiteRef site;
  int32_t object = 0;  // group object (ParallelLayout::objects() index)
  GroupId group;
  BackendKind backend = BackendKind::kNccl;
  Algorithm algorithm = Algorithm::kNone;
  // The launch the chosen kernel runs (not hashed: they follow from the
  // decision): the fused residual + RMSNorm epilogue, blocks per rank.
  bool norm_fused = false;
  int32_t blocks = 0;
  int64_t tokens = 0;
  uint64_t seq = 0;  // call index on the group coordinator
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
  bool failed = false;

  // Every field but the rank and the times equal: the same call of the same
  // group, as two of its members made it.
  bool SameCallAs(const TraceEvent& o) const {
    return site == o.site && object == o.object && group == o.group && backend == o.backend &&
           algorithm == o.algorithm && norm_fused == o.norm_fused && blocks == o.blocks &&
           tokens == o.tokens && seq == o.seq && failed == o.failed;
  }
};
// SameCallAs names every field but three. A field added to TraceEvent must
// be compared there too: this catches one that grows the struct (not one
// that fits in its padding).
static_assert(sizeof(TraceEvent) == 72, "compare a new TraceEvent field in SameCallAs");

class Trace {
 public:
  explicit Trace(bool keep_events) : keep_(keep_events) {}

  void Add(const TraceEvent& event) { AddAs(event, event.rank, event.begin_ns, event.end_ns); }
  // `event` as rank `rank` made it, from `begin_ns` to `end_ns` (the members
  // of a group's run-ahead call share one event: SimComm::Slot::lead).
  void AddAs(const TraceEvent& event, int32_t rank, int64_t begin_ns, int64_t end_ns) {
    AddPrepared(Prepare(event), rank, begin_ns, end_ns);
  }

  // What an event hashes to apart from its rank and times, worked out once
  // for every member of a group that made it (SimComm::FinishRunAhead):
  // AddPrepared(Prepare(e), rank, begin, end) is AddAs(e, rank, begin, end).
  struct Prepared {
    const TraceEvent* event;
    uint64_t group;
    uint64_t instance_seq;
    uint64_t kinds_tokens;
    uint64_t phase;  // 0: an eager call (its phase is not hashed)
  };
  static Prepared Prepare(const TraceEvent& e) {
    // Small fields packed into words: this runs once per call of every rank.
    const uint64_t kinds =
        static_cast<uint64_t>(e.backend) | static_cast<uint64_t>(e.algorithm) << 8 |
        static_cast<uint64_t>(e.site.part) << 16 | static_cast<uint64_t>(e.failed) << 24 |
        static_cast<uint64_t>(static_cast<uint32_t>(e.object)) << 32;
    // A graph's call is hashed with its phase; an eager call's hash is what
    // it was before graphs existed.
    return Prepared{&e, e.group.value, e.site.Instance() ^ (e.seq << 40),
                    kinds ^ (static_cast<uint64_t>(e.tokens) << 40),
                    e.site.phase == CallPhase::kEager
                        ? 0
                        : 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(e.site.phase)};
  }
  void AddPrepared(const Prepared& p, int32_t rank, int64_t begin_ns, int64_t end_ns) {
    // Multiply-xor over the words (FNV-1a on 64-bit words): cheap enough for
    // every call of every rank, and the same on every machine.
    uint64_t h = hash_;
    const auto mix = [&h](uint64_t word) {
      h = (h ^ word) * 0x100000001b3ull;
      h ^= h >> 29;
    };
    mix((static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | p.group);
    mix(p.instance_seq);
    mix(p.kinds_tokens);
    mix(static_cast<uint64_t>(begin_ns));
    mix(static_cast<uint64_t>(end_ns));
    if (p.phase != 0) mix(p.phase);
    hash_ = h;
    ++count_;
    if (keep_) Keep(*p.event, rank, begin_ns, end_ns);
  }
  uint64_t hash() const { return StableHasher::Mix(hash_ ^ count_); }
  size_t size() const { return count_; }
  const std::vector<TraceEvent>& events() const { return events_; }

  // Chrome trace format (chrome://tracing, ui.perfetto.dev): one track per
  // rank, one slice per call, coloured by backend.
  nlohmann::json ToChromeJson(const std::string& title, const ParallelLayout& layout) const {
    return ToChromeJsonOf(events_, title, layout);
  }
  static nlohmann::json ToChromeJsonOf(const std::vector<TraceEvent>& events,
                                       const std::string& title, const ParallelLayout& layout);
  // The same text as ToChromeJsonOf(...).dump(), written event by event: a
  // trace of millions of calls is written in the memory of one event, not of
  // a JSON tree (about 4 KiB per event; issue 11).
  static void WriteChromeJson(std::ostream& out, const std::vector<TraceEvent>& events,
                              const std::string& title, const ParallelLayout& layout);

 private:
  // Out of line: AddPrepared inlines where a completion adds its members.
  void Keep(const TraceEvent& event, int32_t rank, int64_t begin_ns, int64_t end_ns);

  bool keep_;
  size_t count_ = 0;
  uint64_t hash_ = 0xcbf29ce484222325ull;
  std::vector<TraceEvent> events_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_TRACE_H_
