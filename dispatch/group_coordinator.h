// GroupCoordinator: one process group as one rank sees it, and the entry point
// of every all-reduce (SGLang's GroupCoordinator.all_reduce).

#ifndef LOCKSTEP_DISPATCH_GROUP_COORDINATOR_H_
#define LOCKSTEP_DISPATCH_GROUP_COORDINATOR_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "dispatch/backend.h"
#include "dispatch/decision.h"
#include "dispatch/group_layout.h"
#include "dispatch/policy.h"

namespace lockstep {

// Sees every call of a coordinator between its decision and its execution:
// where a runtime checks that the group's members decided alike (the hardware
// runner's --consistency), or hands the chosen backend its launch operands.
// An error it returns is the call's error and nothing runs.
class CallHook {
 public:
  virtual ~CallHook() = default;
  virtual absl::Status BeforeExecute(const DecisionRecord& record, CommBackend& chosen) = 0;
};

class GroupCoordinator {
 public:
  // `group` is the rank's peer set in this group object; `policy` and the
  // backends must outlive the coordinator.
  GroupCoordinator(std::string name, GroupId group, int world_size, int rank_in_group,
                   WorkspaceKind hint, GroupBackends backends, const DispatchPolicy* policy);

  const std::string& name() const { return name_; }
  GroupId group() const { return group_; }
  int world_size() const { return world_size_; }
  int rank_in_group() const { return rank_in_group_; }
  WorkspaceKind hint() const { return hint_; }
  const GroupBackends& backends() const { return backends_; }
  // Calls dispatched so far (the next call's seq).
  uint64_t calls() const { return next_seq_; }

  // Decides and runs one all-reduce of `tensor`, in place. The decision is
  // written to `*record` when given (the runtime keeps them). A backend error
  // is returned as is: no other backend is tried.
  absl::Status AllReduce(Tensor& tensor, DecisionRecord* record = nullptr,
                         const CallContext& context = {});

  // Decides without running: what a graph-tracing frontend calls at trace
  // time. Consumes a sequence number like AllReduce.
  CommBackend* Decide(const CallDesc& call, DecisionRecord& record);

  // Runs one call of a replayed CUDA graph: `chosen` and `recorded` as
  // Decide returned them at capture, on this replay's `tensor`. Nothing is
  // decided again and no sequence number is consumed: a replay runs no host
  // code. The hook sees it as any other call.
  absl::Status Replay(CommBackend& chosen, Tensor& tensor, DecisionRecord& recorded);

  // The hook AllReduce calls between deciding and executing (null: none). Not
  // owned.
  void set_call_hook(CallHook* hook) { hook_ = hook; }

 private:
  std::string name_;
  GroupId group_;
  int world_size_;
  int rank_in_group_;
  WorkspaceKind hint_;
  GroupBackends backends_;
  const DispatchPolicy* policy_;
  CallHook* hook_ = nullptr;
  uint64_t next_seq_ = 0;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_GROUP_COORDINATOR_H_
