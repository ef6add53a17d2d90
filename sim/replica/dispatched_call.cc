#include "sim/replica/dispatched_call.h"

#include <string>

#include "absl/strings/str_format.h"

namespace lockstep {

void FinishDispatchedCall(CallOutcome& out, const absl::Status& status,
                          const ParallelLayout& layout) {
  const DecisionRecord& record = out.record;
  TraceEvent& event = out.event;
  event.backend = record.backend;
  event.algorithm = record.algorithm;
  event.norm_fused = record.norm_fused;
  event.blocks = record.blocks;
  event.seq = record.seq;
  event.failed = !status.ok();
  if (status.ok()) return;

  const std::string group =
      absl::StrFormat("%s %s", layout.objects()[static_cast<size_t>(event.object)].name,
                      layout.PeersToString(event.group));
  Finding f;
  f.verdict = Verdict::kFailStop;
  f.detector = Detector::kBackendRaised;
  f.summary =
      absl::StrFormat("rank %d raised in %s all-reduce at %s: %s", event.rank,
                      BackendKindName(record.backend), event.site.ToString(), status.ToString());
  f.details = {{"rank", event.rank},
               {"site", event.site.ToString()},
               {"group", group},
               {"seq", record.seq},
               {"backend", std::string(BackendKindName(record.backend))},
               {"error", status.ToString()},
               {"decision", ExplainDecision(record, &layout)}};
  f.rank = event.rank;
  f.at_ns = event.end_ns;
  f.timed_out = status.code() == absl::StatusCode::kDeadlineExceeded;
  out.raised = std::move(f);
}

CallOutcome RecordDispatchedCall(TraceEvent event, const DecisionRecord& record,
                                 const absl::Status& status, const ParallelLayout& layout) {
  CallOutcome out{event, record, std::nullopt};
  FinishDispatchedCall(out, status, layout);
  return out;
}

Finding BoundedWaitFinding(int rank, const SiteRef* site, const absl::Status& status,
                           int64_t at_ns) {
  Finding f;
  f.verdict = Verdict::kFailStop;
  f.detector = Detector::kBoundedWait;
  f.rank = rank;
  f.at_ns = at_ns;
  f.timed_out = true;
  if (site != nullptr) {
    f.summary = absl::StrFormat("rank %d at %s: %s", rank, site->ToString(), status.message());
    f.details = {{"rank", rank}, {"site", site->ToString()}, {"error", status.ToString()}};
  } else {
    f.summary = absl::StrFormat("rank %d: %s", rank, status.message());
    f.details = {{"rank", rank}, {"error", status.ToString()}};
  }
  return f;
}

bool DispatchAllReduceInto(CallOutcome& out, GroupCoordinator& coordinator, Tensor& tensor,
                           const CallContext& context, int rank, const SiteRef& site, int object,
                           const ParallelLayout& layout, absl::FunctionRef<int64_t()> clock) {
  // The coordinator decides into `out.record` directly: at thousands of
  // ranks each call's lines are cold, and a record copied through
  // temporaries cost a few hundred bytes of them (docs/PERFORMANCE.md).
  out.raised.reset();
  const int64_t begin = clock();
  const absl::Status status = coordinator.AllReduce(tensor, &out.record, context);
  if (out.record.backend == BackendKind::kSkip) return false;
  // Every field: the rest FinishDispatchedCall fills from the record.
  TraceEvent& event = out.event;
  event = TraceEvent{};
  event.rank = rank;
  event.site = site;
  event.object = object;
  event.group = coordinator.group();
  event.tokens = tensor.desc.tokens();
  event.begin_ns = begin;
  event.end_ns = clock();
  FinishDispatchedCall(out, status, layout);
  return true;
}

std::optional<CallOutcome> DispatchAllReduce(GroupCoordinator& coordinator, Tensor& tensor,
                                             const CallContext& context, int rank,
                                             const SiteRef& site, int object,
                                             const ParallelLayout& layout,
                                             absl::FunctionRef<int64_t()> clock) {
  std::optional<CallOutcome> out(std::in_place);
  if (!DispatchAllReduceInto(*out, coordinator, tensor, context, rank, site, object, layout,
                             clock)) {
    out.reset();
  }
  return out;
}

}  // namespace lockstep
