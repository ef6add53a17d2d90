// Simulated NCCL: one communicator per group instance. Calls are matched by
// sequence number, as NCCL matches them; the contracts of matched calls (op,
// count, dtype, root) are compared, and the result is computed only when
// every member has arrived.

#ifndef LOCKSTEP_SIM_MEMORY_NCCL_COMM_H_
#define LOCKSTEP_SIM_MEMORY_NCCL_COMM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "dispatch/dtype.h"
#include "sim/memory/data.h"
#include "sim/memory/member_index.h"
#include "sim/memory/sim_context.h"
#include "sim/replica/trace.h"

namespace lockstep {

enum class CollectiveOp : uint8_t {
  kAllReduce,
  kAllGather,      // one integer per member (token counts)
  kReduceScatter,  // member m gets elements [offset_m, offset_m + counts[m]) summed
  kAllGatherRows,  // every member gets every member's elements, concatenated
};
std::string_view CollectiveOpName(CollectiveOp op);

struct CollectiveContract {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int64_t count = 0;
  DType dtype = DType::kBf16;
  int root = -1;
  uint64_t counts_digest = 0;  // the per-member element counts (reduce-scatterv, gather)
  friend bool operator==(const CollectiveContract&, const CollectiveContract&) = default;
};

// The element counts of a rows collective, one per member in the group's
// order, with their digest (what members compare: NCCL assumes they agree).
// Members that pass equal lists may share one (SimRun::RowCountsOf).
struct RowCounts {
  explicit RowCounts(std::vector<int64_t> c);
  std::vector<int64_t> counts;
  uint64_t digest = 0;
};

class SimComm : public Waitable {
 public:
  SimComm(SimContext& ctx, std::string name, std::vector<int> ranks);

  const std::string& name() const { return name_; }
  const std::vector<int>& ranks() const { return ranks_; }
  int MemberOf(int rank) const;

  // Blocking sum of every member's `in` into `out` (ring order: every member
  // gets the same bits).
  void AllReduce(int member, DType dtype, const SimTensor& in, SimTensor& out);

  // Run-ahead (SimContext::Stream): posts `member`'s all-reduce of `in` and
  // returns without waiting. Its place in the call order is the member's
  // next sequence number, as a blocking call's is; it completes when every
  // member has posted that sequence and every earlier one completed.
  // FinishPost must follow before any other rank runs.
  void Post(int member, DType dtype, SimTensor in);
  // What the call Post just placed does when it completes: its trace event
  // (begin and end are set then) and the check of its result (`checker`
  // null: none). `expected_owner` keeps the check's expected ranks alive.
  // Completes every call that is now complete.
  void FinishPost(const TraceEvent& event, ReductionChecker* checker, const ReductionCheck& check,
                  std::shared_ptr<const std::vector<int>> expected_owner);
  // The virtual time `member`'s oldest posted call that has not completed
  // was posted at (its clock then, plus its stream's lag).
  int64_t OldestPendingSince(int member) const;
  // Blocking all-gather of one integer per member.
  std::shared_ptr<const std::vector<int64_t>> AllGather(int member, int64_t value);
  // Blocking reduce-scatter(v): member m gets elements
  // [sum(counts[:m]), + counts[m]) of the members' `in`, summed in ring
  // order; `in` holds sum(counts) elements on every member.
  void ReduceScatter(int member, DType dtype, const SimTensor& in, const RowCounts& counts,
                     SimTensor& out);
  // Blocking all-gather(v): every member gets the members' `in`
  // (counts[m] elements each), concatenated in member order.
  void AllGatherRows(int member, DType dtype, const SimTensor& in, const RowCounts& counts,
                     SimTensor& out);

  // Set by the last call `member` made when the watchdog ended it: the
  // virtual time its deadline passed (a peer joined more than the scenario's
  // watchdog_ms after it did). Of the members a late peer kept waiting that
  // long, the first whose deadline passed is the one whose watchdog fires.
  // Reading it clears it.
  std::optional<int64_t> TakeExpiry(int member);
  // The watchdog's budget (timeouts.watchdog_ms).
  int64_t WatchdogNs() const;

  // A member blocked in a call, or draining its posted ones, waits for the
  // oldest call that has not completed: the members that have not posted it.
  std::string DescribeWait(int rank, int64_t detail) const override;
  std::vector<int> WaitsOn(int rank, int64_t detail) const override;
  bool IsKernelWait() const override { return false; }

 private:
  // What a posted (run-ahead) call holds until it completes: its input, its
  // trace event (begin and end are set then) and what its result is checked
  // against. The check's rank and site are the event's, its element count
  // the input's and its origin 0 (CheckAt); its result is the member's entry
  // of `results_`, written and checked in the completion.
  struct Posted {
    SimTensor in;
    TraceEvent event;
    ReductionChecker* checker = nullptr;  // null: not checked
    uint64_t instance = 0;
    uint64_t group_key = 0;
    std::span<const int> expected;
    std::shared_ptr<const std::vector<int>> expected_owner;

    ReductionCheck CheckAt(int64_t at_ns) const {
      return ReductionCheck{event.rank, event.site, instance, expected,
                            group_key,  in.elems,   0,        at_ns};
    }
  };
  struct Call {
    bool posted = false;
    CollectiveContract contract;
    const SimTensor* in = nullptr;
    SimTensor* out = nullptr;
    int64_t value = 0;
    int64_t arrival_ns = 0;
    const std::vector<int64_t>* counts = nullptr;  // reduce-scatter / gather rows
    // A run-ahead call: `in` is its Posted's and `out` the member's entry of
    // `results_`; else the member waits in it.
    bool ahead = false;
  };
  // Every member's call of one sequence number.
  struct Slot {
    std::vector<Call> calls;
    // What the members' run-ahead calls hold, by member: sized in every
    // slot at the communicator's first post (and in slots a later growth
    // adds), kept for the posts that reuse the slot.
    std::vector<Posted> held;
    int posted = 0;
  };
  // The slot of sequence `seq` (the ring grows to hold every sequence from
  // the oldest incomplete one to `seq`).
  Slot& SlotOf(uint64_t seq) {
    if (seq - completed_ >= ring_.size()) GrowRing(seq);
    return ring_[seq & (ring_.size() - 1)];
  }
  // Remakes the ring (a power of two, never smaller) to hold every sequence
  // from the oldest incomplete one to `seq`; sizes every slot's calls, and
  // its holders once the communicator has posted.
  void GrowRing(uint64_t seq);
  // The member's call at its next sequence, marked posted at its clock (not
  // run-ahead); `seq_out`, when given, gets the sequence. The caller sets
  // what the call is.
  Call& Place(int member, uint64_t* seq_out) {
    const auto m = static_cast<size_t>(member);
    const uint64_t seq = next_seq_[m]++;
    Slot& slot = SlotOf(seq);
    Call& placed = slot.calls[m];
    placed.posted = true;
    placed.ahead = false;
    placed.arrival_ns = ctx_.Clock(ranks_[m]);
    ++slot.posted;
    if (seq_out != nullptr) *seq_out = seq;
    return placed;
  }
  // Posts the member's call; returns once the collective completed.
  void Arrive(int member, Call&& call);
  // The virtual time `member`'s call arrived at.
  int64_t ArrivalOf(const Call& call, size_t member) const;
  // Completes the oldest slots while every member has posted them.
  void CompleteReady();
  // Completes sequence `seq`; false when it cannot (its contracts disagree,
  // or a run-ahead run must fall back to the interleaved model).
  bool Complete(Slot& slot, uint64_t seq);
  // Out of Complete's frame (it runs on a fiber's stack in every call): the
  // finding of members whose contracts disagree (member `m` is the first
  // that differs from member 0), and every member's result of a collective
  // AllReduceWholeInputs does not take.
  ABSL_ATTRIBUTE_NOINLINE void ReportContractMismatch(const std::vector<Call>& calls, uint64_t seq,
                                                      size_t m);
  ABSL_ATTRIBUTE_NOINLINE void WriteResults(std::vector<Call>& calls, int64_t done);
  // A reduce-scatter of inputs that are each one run over the whole buffer:
  // summed once for the group, every share a slice. Returns false (nothing
  // done) for any other inputs.
  bool ReduceScatterWholeInputs(const std::vector<Call>& calls, const std::vector<int64_t>& counts,
                                int64_t done);
  // An all-reduce of `count` elements whose inputs are each one run covering
  // them (what a symbolic input is): the sum is one value, added up once, and
  // every member's result is one run holding it (of the run-ahead members,
  // only `sole`'s when it is not -1: see SoleCheckOf). Returns false
  // (nothing done) for any other inputs, and in numeric mode.
  bool AllReduceWholeInputs(const std::vector<Call>& calls, int64_t count, int64_t done, int sole);
  // The first run-ahead member of `calls` when every run-ahead member's
  // check is the same (one check then stands for all, and only that
  // member's result is made); -1 when there is none or they differ.
  int SoleCheckOf(const Slot& slot) const;
  // The checks and trace events of the run-ahead calls of a completed slot.
  void FinishRunAhead(Slot& slot, int64_t done, int sole);

  SimContext& ctx_;
  std::string name_;
  std::vector<int> ranks_;
  HopClass worst_hop_;
  // Slot k % size holds sequence k, from the oldest incomplete sequence on
  // (the size is a power of two).
  std::vector<Slot> ring_;
  uint64_t completed_ = 0;         // the oldest sequence not completed
  Posted* just_posted_ = nullptr;  // Post's, until FinishPost
  // Per member, the result of its run-ahead call in the completion that
  // writes and checks it (calls complete one at a time): one per member, not
  // one per posted call. Sized at the first post.
  std::vector<SimTensor> results_;
  std::vector<uint64_t> next_seq_;  // per member
  std::vector<int64_t> gathered_;
  // Per member, what its last all-gather returned: one vector shared by every
  // member of that call (a copy each made one call of n members cost n²).
  std::vector<std::shared_ptr<const std::vector<int64_t>>> gathered_for_;
  std::vector<int64_t> expired_at_;  // per member, -1: none (TakeExpiry)
  MemberIndex index_;                // ranks_ by rank
};

// Point-to-point messages between pipeline stages (NCCL send/recv): eager
// sends, blocking receives, matched in order per (source, destination).
class SimMailbox : public Waitable {
 public:
  SimMailbox(SimContext& ctx, int world);
  void Send(int from, int to, int64_t count);
  // Blocks until the next message from `from` arrives; returns its count, or
  // -1 if the run shut down first. When the message landed more than the
  // watchdog's budget after the receive began, `*expired_at` is set to the
  // virtual time the deadline passed (and the receiver's clock stops there).
  int64_t Recv(int to, int from, std::optional<int64_t>* expired_at);

  std::string DescribeWait(int rank, int64_t detail) const override;
  std::vector<int> WaitsOn(int rank, int64_t detail) const override;
  bool IsKernelWait() const override { return false; }

 private:
  struct Message {
    int64_t count;
    int64_t ready_ns;
  };
  // One (source, destination) pair's messages in arrival order, held in
  // the map's slot for the usual one or two in flight (a std::deque
  // allocated a 512-byte node and its map for every pair, and reached a
  // message through both).
  struct Queue {
    absl::InlinedVector<Message, 2> items;
    uint32_t head = 0;  // items before it were received
    bool empty() const { return head == items.size(); }
    Message Pop();
  };
  SimContext& ctx_;
  int world_;
  // Keyed by from * world + to.
  absl::flat_hash_map<uint64_t, Queue> queues_;
  std::vector<int> waiting_on_;  // per rank: source it waits for, or -1
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_NCCL_COMM_H_
