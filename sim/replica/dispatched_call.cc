#include "sim/replica/dispatched_call.h"

#include <string>

#include "absl/strings/str_format.h"

namespace lockstep {

CallOutcome RecordDispatchedCall(const DispatchedCall& call, const ParallelLayout& layout) {
  const DecisionRecord& record = *call.record;
  CallOutcome out;
  TraceEvent& event = out.event;
  event.rank = call.rank;
  event.site = call.site;
  event.object = call.object;
  event.group = call.group;
  event.backend = record.backend;
  event.algorithm = record.algorithm;
  event.tokens = call.tokens;
  event.seq = record.seq;
  event.begin_ns = call.begin_ns;
  event.end_ns = call.end_ns;
  event.failed = !call.status.ok();
  if (call.status.ok()) return out;

  const std::string group =
      absl::StrFormat("%s %s", layout.objects()[static_cast<size_t>(call.object)].name,
                      layout.PeersToString(call.group));
  Finding f;
  f.verdict = Verdict::kFailStop;
  f.detector = Detector::kBackendRaised;
  f.summary = absl::StrFormat("rank %d raised in %s all-reduce at %s: %s", call.rank,
                              BackendKindName(record.backend), call.site.ToString(),
                              call.status.ToString());
  f.details = {{"rank", call.rank},
               {"site", call.site.ToString()},
               {"group", group},
               {"seq", record.seq},
               {"backend", std::string(BackendKindName(record.backend))},
               {"error", call.status.ToString()},
               {"decision", ExplainDecision(record, &layout)}};
  f.rank = call.rank;
  f.at_ns = call.end_ns;
  f.timed_out = call.status.code() == absl::StatusCode::kDeadlineExceeded;
  out.raised = std::move(f);
  return out;
}

}  // namespace lockstep
