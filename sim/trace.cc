#include "sim/trace.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace lockstep {

void Trace::Add(const TraceEvent& e) {
  hasher_.Add(static_cast<uint64_t>(e.rank))
      .Add(e.site.Instance())
      .Add(e.site.part)
      .Add(static_cast<uint64_t>(e.object))
      .Add(e.group.value)
      .Add(static_cast<uint64_t>(e.backend))
      .Add(static_cast<uint64_t>(e.algorithm))
      .Add(static_cast<uint64_t>(e.tokens))
      .Add(e.seq)
      .Add(static_cast<uint64_t>(e.begin_ns))
      .Add(static_cast<uint64_t>(e.end_ns))
      .Add(e.failed);
  ++count_;
  if (keep_) events_.push_back(e);
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

nlohmann::json Trace::ToChromeJsonOf(const std::vector<TraceEvent>& trace, const std::string& title,
                                     const ParallelLayout& layout) {
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
  for (const TraceEvent& e : trace) {
    const std::string backend(BackendKindName(e.backend));
    const std::string& object = layout.objects()[static_cast<size_t>(e.object)].name;
    events.push_back(
        {{"name", absl::StrFormat("%s %s %s", SiteKindName(e.site.kind), object, backend)},
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
           {"failed", e.failed}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}};
}

}  // namespace lockstep
