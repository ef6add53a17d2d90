// Fusion workspaces in simulated peer memory, and the memory policy that runs
// the Lamport protocols of kernels/protocol/ over them.

#ifndef LOCKSTEP_SIM_MEMORY_WORKSPACE_MEMORY_H_
#define LOCKSTEP_SIM_MEMORY_WORKSPACE_MEMORY_H_

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "dispatch/decision.h"
#include "dispatch/workspace.h"
#include "kernels/protocol/lamport.h"
#include "kernels/protocol/memory_model.h"
#include "sim/memory/data.h"
#include "sim/memory/lamport_buffer.h"
#include "sim/memory/member_index.h"
#include "sim/memory/run_list.h"
#include "sim/memory/sim_context.h"

namespace lockstep {

// One workspace instance: the receive buffers and control block of every rank
// of the peer set it rendezvoused on. Ranks address peers by their index in
// `peers()`: a rank using a workspace bound to other peers pushes to, and
// waits for, those other peers — exactly as on a GPU.
class SimWorkspace : public Waitable {
 public:
  SimWorkspace(SimContext& ctx, std::string name, WorkspaceKind kind, std::vector<int> peers,
               GroupId group, WorkspaceCapacity capacity);

  const std::string& name() const { return name_; }
  WorkspaceKind kind() const { return kind_; }
  const std::vector<int>& peers() const { return peers_; }
  GroupId group() const { return group_; }
  const WorkspaceCapacity& capacity() const { return capacity_; }
  // Index of global rank `rank` in peers(), or -1.
  int MemberOf(int rank) const;
  // The bound of every poll (the scenario's timeouts.kernel_wait_ms).
  int64_t WaitBudgetNs() const {
    return static_cast<int64_t>(ctx_.scenario.timeouts.kernel_wait_ms * 1e6);
  }

  // Runs one fused all-reduce of `in` into `out` as member `member`, with the
  // protocol the decision chose. Returns only when the protocol completes; a
  // rank whose protocol cannot complete stays blocked.
  protocol::ProtocolStatus RunAllReduce(int member, const DecisionRecord& decision,
                                        const SimTensor& in, SimTensor& out);

  // For faults: a member's control block and buffers.
  protocol::LamportState& State(int member) { return members_[static_cast<size_t>(member)].state; }
  LamportBuffer& Buffer(int member, uint32_t buffer) {
    return members_[static_cast<size_t>(member)].buffers[buffer];
  }

  std::string DescribeWait(int rank, int64_t detail) const override;
  std::vector<int> WaitsOn(int rank, int64_t detail) const override;
  bool WaitsOnLostWrite(int rank, int64_t detail) const override;
  bool IsKernelWait() const override { return true; }
  bool WaitIsBounded(int rank, int64_t detail) const override;

  // Lands `v` (written by global rank `writer`) in member `peer`'s `buffer` at
  // `offset`, waking the member if it polls that range.
  void Store(int writer, int32_t peer, uint32_t buffer, int64_t offset, const SimChunk& v,
             int64_t ready_ns);

  // Re-binds the workspace to another peer set (a fault's stale binding).
  void Rebind(std::vector<int> peers, GroupId group, uint32_t generation);
  uint32_t generation() const { return generation_; }

 private:
  friend class LamportMem;
  // A push a fault destroyed: `writer` to member `target`, call `epoch`.
  struct LostWrite {
    int32_t writer;
    int32_t target;
    uint64_t epoch;
  };
  struct Waiter {
    bool active = false;
    uint32_t buffer = 0;
    int64_t offset = 0;
    int64_t len = 0;
    int32_t writer = -1;  // index in peers_
    bool bounded = true;  // the poll gives up after the wait budget
  };
  struct Member {
    std::array<LamportBuffer, protocol::kLamportBuffers> buffers;
    protocol::LamportState state;
    Waiter waiter;
  };
  // A two-shot call's result as its members gather it, owner by owner: run k
  // is what the first member to reach its k-th run stored there. A member
  // whose runs are the same (range, value and source element) keeps none of
  // its own and ends the call sharing this list, so that a group of n pays
  // for one result rather than n (each n runs long). Only the ready time and
  // the writer of a run differ between members, and a tensor's are never
  // read: RunList::Read gives ready times only to buffers' readers.
  struct GatheredResult {
    uint64_t epoch = 0;  // the call on the workspace (LamportMem::epoch_)
    int64_t elems = 0;
    RunList runs;
  };

  SimContext& ctx_;
  std::string name_;
  WorkspaceKind kind_;
  std::vector<int> peers_;
  GroupId group_;
  WorkspaceCapacity capacity_;
  uint32_t generation_ = 0;
  std::vector<Member> members_;
  std::vector<LostWrite> lost_;
  MemberIndex index_;  // peers_ by rank
  // The latest two-shot call's result being gathered (null: none yet). A
  // member holds its own reference for its call.
  std::shared_ptr<GatheredResult> gathered_;
};

// The memory policy of kernels/protocol/memory_model.h over a SimWorkspace:
// one chunk is a whole range; a poll that finds the sentinel blocks the rank
// until a store lands in the range it watches.
class LamportMem : public protocol::WholeRangeChunks {
 public:
  using Value = SimChunk;
  using Acc = Accumulator;

  // `bounded`: every poll gives up after the workspace's wait budget (the
  // reference); else it waits without bound.
  LamportMem(SimWorkspace& ws, int member, const SimTensor& in, SimTensor& out, bool fp32_acc,
             protocol::SentinelTest sentinel, bool bounded)
      : ws_(ws),
        ctx_(ws.ctx_),
        member_(member),
        rank_(ws.peers_[static_cast<size_t>(member)]),
        epoch_(ws.members_[static_cast<size_t>(member)].state.calls + 1),
        ftz_(ws.ctx_.scenario.workload.ftz ||
             (ws.ctx_.faults != nullptr && ws.ctx_.faults->ForcesFtz())),
        in_(in),
        out_(out),
        fp32_acc_(fp32_acc),
        sentinel_(sentinel),
        bounded_(bounded),
        wait_budget_ns_(bounded ? ws.WaitBudgetNs() : std::numeric_limits<int64_t>::max() / 2) {}

  Value LoadInput(int64_t pos, int64_t len);
  void Sanitize(Value& v) { SanitizeChunk(ctx_, v); }
  void Push(int32_t peer, uint32_t buffer, int64_t offset, const Value& v);
  bool Wait(uint32_t buffer, int64_t offset, int64_t len, int32_t writer, Value* out);
  void Clear(uint32_t buffer, int64_t offset, int64_t len);
  bool VerifyCleared(uint32_t buffer, int64_t offset, int64_t len);
  Acc Zero() const {
    Acc a;
    a.fp32 = fp32_acc_;
    return a;
  }
  void Add(Acc& acc, const Value& v) { AccumulatorAdd(ctx_, acc, v); }
  Value Finish(const Acc& acc) { return AccumulatorFinish(ctx_, acc); }
  void StoreOutput(int64_t pos, const Value& v) {
    if (gathered_ != nullptr && MatchGathered(pos, v)) return;
    WriteChunk(out_.runs, pos, v, ctx_.Clock(rank_), rank_);
  }
  // A two-shot call: the result is matched against the group's as it is
  // stored (SimWorkspace::GatheredResult). Called before the protocol.
  void GatherWithGroup();
  // After the protocol: the result matched so far becomes the output (the
  // group's list, shared, when it matched all of it).
  void FinishGathered();
  protocol::LamportState& State() { return ws_.members_[static_cast<size_t>(member_)].state; }
  bool ArriveLast() { return true; }
  // Why the protocol stopped: a failed clear verification, a bounded wait
  // that ran out of virtual time (the awaited push landed more than the
  // scenario's kernel_wait_ms after the poll began, as the GPU kernel's
  // timer would have expired), or the run shutting down.
  protocol::ProtocolStatus Failure() const { return failure_; }

 private:
  SimWorkspace& ws_;
  SimContext& ctx_;
  int member_;
  int rank_;
  uint64_t epoch_;  // this call on the workspace, 1-based
  bool ftz_;        // the kernel runs with flush-to-zero
  const SimTensor& in_;
  SimTensor& out_;
  bool fp32_acc_;
  protocol::SentinelTest sentinel_;
  bool bounded_;            // polls give up after the budget (kBoundedWaits)
  int64_t wait_budget_ns_;  // every poll's bound (timeouts.kernel_wait_ms)
  protocol::ProtocolStatus failure_{protocol::ProtocolError::kAborted, -1, 0, 0};
  // While the result matches the group's: that result, and how many of its
  // runs this member's stores have matched (the output holds none of them
  // yet). Null: the output is written run by run.
  std::shared_ptr<SimWorkspace::GatheredResult> gathered_;
  size_t matched_ = 0;

  // Whether `v`, stored at `pos`, is (or now becomes) the group result's next
  // run; else the output takes the runs matched so far and stops matching.
  bool MatchGathered(int64_t pos, const Value& v);
  // The output = the group result's first matched_ runs; matching stops.
  void TakeMatchedRuns();

  // The virtual time a push of `bytes` to global rank `target` (not this
  // one) takes to land.
  int64_t TransferNs(int target, int64_t bytes);
  // A push to another rank under faults or relaxed memory: dropped, delayed,
  // landing late, or stored now. Out of line: the usual push stays small.
  [[gnu::noinline]] void PushToPeer(int32_t peer, int target, uint32_t buffer, int64_t offset,
                                    const Value& v, int64_t ready);
  // A push's transfer time by link class (HopClass), for the size last
  // pushed over that class (bytes -1: none yet).
  struct TransferTime {
    int64_t bytes = -1;
    int64_t ns = 0;
  };
  std::array<TransferTime, kHopClasses> transfer_ns_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_WORKSPACE_MEMORY_H_
