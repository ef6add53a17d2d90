// The bookkeeping of one dispatched all-reduce, shared by every host of the
// workload (the simulator and the hardware runner): the event it adds to the
// trace and, when its backend raised, the finding that stops the job.

#ifndef LOCKSTEP_SIM_REPLICA_DISPATCHED_CALL_H_
#define LOCKSTEP_SIM_REPLICA_DISPATCHED_CALL_H_

#include <cstdint>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "dispatch/decision.h"
#include "dispatch/group_coordinator.h"
#include "dispatch/group_layout.h"
#include "dispatch/tensor.h"
#include "sim/replica/site.h"
#include "sim/replica/trace.h"
#include "sim/scenario/finding.h"

namespace lockstep {

struct CallOutcome {
  TraceEvent event;
  DecisionRecord record;  // what the dispatch core decided (decision logs)
  // Set when the backend raised: the rank raises, and the launcher tears the
  // job down (fail_stop; timed_out when a bounded wait or watchdog expired).
  std::optional<Finding> raised;
};

// What a dispatched call leaves behind. The host fills where and when the
// call ran in `event` (rank, site, object, group, tokens, begin and end on
// its clock); the decision and the call's status fill the rest. `layout`
// names the group in the finding. Calls the coordinator skipped (groups of
// one rank) leave nothing and must not be passed here.
CallOutcome RecordDispatchedCall(TraceEvent event, const DecisionRecord& record,
                                 const absl::Status& status, const ParallelLayout& layout);
// The same, in place: the host has filled `out.record` and `out.event`'s
// where and when; this adds the decision to the event and, when the call
// failed, the finding.
void FinishDispatchedCall(CallOutcome& out, const absl::Status& status,
                          const ParallelLayout& layout);

// A wait outside the dispatched all-reduce (a row collective at `site`, a
// token all-gather or an activation receive: `site` empty) that a peer did
// not end before the watchdog's deadline: the job stops, fail_stop, timed
// out, as every host reports it. `at_ns` is when the deadline passed.
Finding BoundedWaitFinding(int rank, const SiteRef* site, const absl::Status& status,
                           int64_t at_ns);

// One all-reduce of `tensor` through `coordinator` (group object `object`),
// as rank `rank` makes it at `site`, with its bookkeeping; `clock` reads the
// host's clock before and after. nullopt when the coordinator skipped it (a
// group of one rank).
std::optional<CallOutcome> DispatchAllReduce(GroupCoordinator& coordinator, Tensor& tensor,
                                             const CallContext& context, int rank,
                                             const SiteRef& site, int object,
                                             const ParallelLayout& layout,
                                             absl::FunctionRef<int64_t()> clock);
// The same into `out`, which a host reuses from call to call: every field is
// written afresh (the coordinator decides into `out.record` from a fresh
// record). False, `out` then unspecified, when the coordinator skipped the
// call. (The simulator's hosts dispatch every rank-call through this: an
// outcome of 336 bytes built in place each call cost 3 % of a rank-call.)
bool DispatchAllReduceInto(CallOutcome& out, GroupCoordinator& coordinator, Tensor& tensor,
                           const CallContext& context, int rank, const SiteRef& site, int object,
                           const ParallelLayout& layout, absl::FunctionRef<int64_t()> clock);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_DISPATCHED_CALL_H_
