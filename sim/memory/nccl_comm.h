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
  // FinishPost must follow before any other rank runs. `in`'s runs are
  // taken (it is left empty) unless it is one whole symbolic run, whose
  // fields are copied and `in` left as it was: the caller must not read it
  // either way. (Taken by reference: a tensor moved into a parameter cost a
  // move and a destructor on every posted call, 3 % of a rank-call.)
  void Post(int member, DType dtype, SimTensor& in);
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
  // What a posted (run-ahead) call does when it completes: its trace event
  // (begin and end are set then) and what its result is checked against.
  // The check's rank and site are the event's, its element count the
  // contract's and its origin 0 (CheckOf); its result is the member's entry
  // of `results_`, written and checked in the completion.
  struct PostedCall {
    TraceEvent event;
    ReductionChecker* checker = nullptr;  // null: not checked
    uint64_t instance = 0;
    uint64_t group_key = 0;
    std::span<const int> expected;
    std::shared_ptr<const std::vector<int>> expected_owner;
  };
  // What one member's posted call holds apart from its slot's lead (Slot::
  // lead): its input when it is not a WholeInput, and its event or check
  // when they are not the lead's (Call::own_event, own_check).
  struct Posted {
    SimTensor in;
    PostedCall own;
  };
  // A run-ahead all-reduce's input that is one run over the whole tensor, of
  // a symbolic value (what every symbolic input is): the fields the
  // completion reads, kept in its Call rather than as a tensor in its
  // Posted. MaterializeInputs remakes the tensor where the general path
  // needs it.
  struct WholeInput {
    uint64_t key_sum = 0;
    uint64_t bits = 0;
    int64_t src = 0;       // the run's `src`
    int64_t ready_ns = 0;  // the run's
    uint32_t count = 0;
    uint32_t exact = 0;
    int32_t writer = -1;  // the run's
    uint8_t flags = 0;
  };
  // One member's call of one sequence number, in 128 bytes: the first 64
  // hold what every completion reads, the rest a run-ahead call's whole
  // input and what other collectives read, so that a wide group's
  // completion reads two or three lines a member and a post writes as many.
  // (Not alignas(64), which would keep each in two lines: a vector of an
  // over-aligned type is allocated through memalign, whose blocks came from
  // untouched pages in the timed part; the tp8 row at world 4 096 took 17.5
  // page faults per 1 000 rank-calls instead of 2.3.)
  struct Call {
    bool posted = false;
    // A run-ahead call: its input is `whole_in` (`whole`) or its Posted's
    // `in`, and `out` the member's entry of `results_`; else the member
    // waits in it.
    bool ahead = false;
    // A run-ahead call whose Posted holds its own event (else it is the
    // slot's lead's as this member made it) and its own check (else the
    // lead's).
    bool own_event = false;
    bool own_check = false;
    // A run-ahead call whose input is `whole_in`: `in` is null until
    // MaterializeInputs.
    bool whole = false;
    int64_t arrival_ns = 0;
    CollectiveContract contract;
    const SimTensor* in = nullptr;
    SimTensor* out = nullptr;
    int64_t value = 0;
    const std::vector<int64_t>* counts = nullptr;  // reduce-scatter / gather rows
    WholeInput whole_in;
  };
  static_assert(sizeof(Call) == 128, "a Call is 128 bytes, its first 64 what completions read");
  // Every member's call of one sequence number.
  struct Slot {
    std::vector<Call> calls;
    int posted = 0;
    // The first member to post the slot's sequence run-ahead (-1: none
    // yet). Its event and check are `lead_call`, and a member posting after
    // it stores only what differs (in its Posted). The members of a group
    // all post one site's call at a sequence, so in a wide group this is one
    // event and one check written and read for the group rather than one
    // per member, each a cold line.
    int lead = -1;
    // Some run-ahead member's check differs from the lead's (no check
    // then stands for the group's: SoleCheckOf).
    bool checks_differ = false;
    PostedCall lead_call;
    // By member; made the first time a member needs one (HeldOf) and kept
    // for the posts that reuse the slot.
    std::vector<Posted> held;
  };
  // The slot of sequence `seq` (the ring grows to hold every sequence from
  // the oldest incomplete one to `seq`).
  Slot& SlotOf(uint64_t seq) {
    if (seq - completed_ >= ring_.size()) GrowRing(seq);
    return ring_[seq & (ring_.size() - 1)];
  }
  // Remakes the ring (a power of two, never smaller) to hold every sequence
  // from the oldest incomplete one to `seq`, and sizes every slot's calls.
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
    placed.whole = false;
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
  // Member `m`'s Posted in `slot`.
  Posted& HeldOf(Slot& slot, size_t m) {
    if (slot.held.empty()) slot.held.resize(ranks_.size());
    return slot.held[m];
  }
  // Member `m`'s event (its own or the lead's) and the rank it names.
  const TraceEvent& EventOf(const Slot& slot, size_t m, int32_t* rank) const {
    if (slot.calls[m].own_event) {
      const TraceEvent& own = slot.held[m].own.event;
      *rank = own.rank;
      return own;
    }
    *rank = ranks_[m];
    return slot.lead_call.event;
  }
  // Every run-ahead member's input that is held as a WholeInput, made a
  // tensor in its Posted (for the general path).
  void MaterializeInputs(Slot& slot);
  // The check of member `m`'s result at `at_ns`, from its Posted or its
  // slot's lead's.
  ReductionCheck CheckOf(const Slot& slot, size_t m, int64_t at_ns) const;
  // The checks and trace events of the run-ahead calls of a completed slot.
  void FinishRunAhead(Slot& slot, int64_t done, int sole);

  SimContext& ctx_;
  std::string name_;
  std::vector<int> ranks_;
  HopClass worst_hop_;
  // Slot k % size holds sequence k, from the oldest incomplete sequence on
  // (the size is a power of two).
  std::vector<Slot> ring_;
  uint64_t completed_ = 0;  // the oldest sequence not completed
  // Post's sequence and member, until FinishPost (a sequence, not its slot:
  // the ring may be remade, which moves its slots); kNotPosted: none.
  static constexpr uint64_t kNotPosted = ~uint64_t{0};
  uint64_t just_posted_seq_ = kNotPosted;
  size_t just_posted_member_ = 0;
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
