#include "sim/replica/trace.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace lockstep {

void Trace::AddAs(const TraceEvent& e, int32_t rank, int64_t begin_ns, int64_t end_ns) {
  // Small fields packed into words: this runs once per call of every rank.
  const uint64_t kinds =
      static_cast<uint64_t>(e.backend) | static_cast<uint64_t>(e.algorithm) << 8 |
      static_cast<uint64_t>(e.site.part) << 16 | static_cast<uint64_t>(e.failed) << 24 |
      static_cast<uint64_t>(static_cast<uint32_t>(e.object)) << 32;
  // Multiply-xor over the words (FNV-1a on 64-bit words): cheap enough for
  // every call of every rank, and the same on every machine.
  for (uint64_t word :
       {(static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | e.group.value,
        e.site.Instance() ^ (e.seq << 40), kinds ^ (static_cast<uint64_t>(e.tokens) << 40),
        static_cast<uint64_t>(begin_ns), static_cast<uint64_t>(end_ns)}) {
    hash_ = (hash_ ^ word) * 0x100000001b3ull;
    hash_ ^= hash_ >> 29;
  }
  // A graph's call is hashed with its phase; an eager call's hash is what it
  // was before graphs existed.
  if (e.site.phase != CallPhase::kEager) {
    hash_ =
        (hash_ ^ (0x9e3779b97f4a7c15ull + static_cast<uint64_t>(e.site.phase))) * 0x100000001b3ull;
    hash_ ^= hash_ >> 29;
  }
  ++count_;
  if (keep_) {
    TraceEvent& kept = events_.emplace_back(e);
    kept.rank = rank;
    kept.begin_ns = begin_ns;
    kept.end_ns = end_ns;
  }
}

namespace {

// Chrome's reserved colour names.
const char* BackendColour(BackendKind kind, bool failed) {
  if (failed) return "terrible";
  switch (kind) {
    case BackendKind::kFused:
      return "good";
    case BackendKind::kCustom:
      return "yellow";
    case BackendKind::kNccl:
      return "thread_state_iowait";
    case BackendKind::kSkip:
      break;
  }
  return "grey";
}

}  // namespace

namespace {

nlohmann::json EventJson(const TraceEvent& e, const ParallelLayout& layout) {
  const std::string backend(BackendKindName(e.backend));
  const std::string& object = layout.objects()[static_cast<size_t>(e.object)].name;
  return {{"name", absl::StrFormat("%s %s %s", SiteKindName(e.site.kind), object, backend)},
          {"cat", backend},
          {"ph", "X"},
          {"pid", 0},
          {"tid", e.rank},
          {"ts", static_cast<double>(e.begin_ns) / 1e3},
          {"dur", static_cast<double>(std::max<int64_t>(e.end_ns - e.begin_ns, 1)) / 1e3},
          {"cname", BackendColour(e.backend, e.failed)},
          {"args",
           {{"site", e.site.ToString()},
            {"group", layout.PeersToString(e.group)},
            {"backend", backend},
            {"algorithm", std::string(AlgorithmName(e.algorithm))},
            {"tokens", e.tokens},
            {"seq", e.seq},
            {"failed", e.failed}}}};
}

// The metadata events: the process title and one name per rank track.
nlohmann::json MetadataEvents(const std::vector<TraceEvent>& trace, const std::string& title) {
  nlohmann::json events = nlohmann::json::array();
  int max_rank = -1;
  for (const TraceEvent& e : trace) max_rank = std::max(max_rank, e.rank);
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 0}, {"args", {{"name", title}}}});
  for (int r = 0; r <= max_rank; ++r) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"tid", r},
                      {"args", {{"name", absl::StrFormat("rank %d", r)}}}});
  }
  return events;
}

}  // namespace

nlohmann::json Trace::ToChromeJsonOf(const std::vector<TraceEvent>& trace, const std::string& title,
                                     const ParallelLayout& layout) {
  nlohmann::json events = MetadataEvents(trace, title);
  for (const TraceEvent& e : trace) events.push_back(EventJson(e, layout));
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

void Trace::WriteChromeJson(std::ostream& out, const std::vector<TraceEvent>& trace,
                            const std::string& title, const ParallelLayout& layout) {
  // The bytes of ToChromeJsonOf(...).dump(): keys in nlohmann's (sorted)
  // order, one event converted at a time.
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  for (const nlohmann::json& m : MetadataEvents(trace, title)) {
    out << (first ? "" : ",") << m.dump();
    first = false;
  }
  for (const TraceEvent& e : trace) out << "," << EventJson(e, layout).dump();
  out << "]}";
}

}  // namespace lockstep
