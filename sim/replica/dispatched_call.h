// The bookkeeping of one dispatched all-reduce, shared by every host of the
// workload (the simulator and the hardware runner): the event it adds to the
// trace and, when its backend raised, the finding that stops the job.

#ifndef LOCKSTEP_SIM_REPLICA_DISPATCHED_CALL_H_
#define LOCKSTEP_SIM_REPLICA_DISPATCHED_CALL_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "dispatch/decision.h"
#include "dispatch/group_layout.h"
#include "sim/replica/site.h"
#include "sim/replica/trace.h"
#include "sim/report/finding.h"

namespace lockstep {

// One call as a host saw it, after the coordinator returned.
struct DispatchedCall {
  int rank = 0;
  SiteRef site;
  int object = 0;  // group object (ParallelLayout::objects() index)
  GroupId group;
  const DecisionRecord* record = nullptr;
  int64_t tokens = 0;
  int64_t begin_ns = 0;  // the host's clock (virtual in the simulator)
  int64_t end_ns = 0;
  absl::Status status;
};

struct CallOutcome {
  TraceEvent event;
  // Set when the backend raised: the rank raises, and the launcher tears the
  // job down (fail_stop; timed_out when a bounded wait or watchdog expired).
  std::optional<Finding> raised;
};

// What a dispatched call leaves behind. `layout` names the group in the
// finding. Calls the coordinator skipped (groups of one rank) leave nothing
// and must not be passed here.
CallOutcome RecordDispatchedCall(const DispatchedCall& call, const ParallelLayout& layout);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_DISPATCHED_CALL_H_
