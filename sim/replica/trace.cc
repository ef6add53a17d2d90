#include "sim/replica/trace.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace lockstep {

void Trace::Keep(const TraceEvent& event, int32_t rank, int64_t begin_ns, int64_t end_ns) {
  TraceEvent& kept = events_.emplace_back(event);
  kept.rank = rank;
  kept.begin_ns = begin_ns;
  kept.end_ns = end_ns;
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
