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
  void AddAs(const TraceEvent& event, int32_t rank, int64_t begin_ns, int64_t end_ns);
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
  bool keep_;
  size_t count_ = 0;
  uint64_t hash_ = 0xcbf29ce484222325ull;
  std::vector<TraceEvent> events_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_TRACE_H_
