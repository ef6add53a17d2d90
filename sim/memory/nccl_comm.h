// Simulated NCCL: one communicator per group instance. Calls are matched by
// sequence number, as NCCL matches them; the contracts of matched calls (op,
// count, dtype, root) are compared, and the result is computed only when
// every member has arrived.

#ifndef LOCKSTEP_SIM_MEMORY_NCCL_COMM_H_
#define LOCKSTEP_SIM_MEMORY_NCCL_COMM_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dispatch/dtype.h"
#include "sim/memory/data.h"
#include "sim/memory/member_index.h"
#include "sim/memory/sim_context.h"

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

  std::string DescribeWait(int rank, int64_t detail) const override;
  std::vector<int> WaitsOn(int rank, int64_t detail) const override;
  bool IsKernelWait() const override { return false; }

 private:
  struct Post {
    bool posted = false;
    CollectiveContract contract;
    const SimTensor* in = nullptr;
    SimTensor* out = nullptr;
    int64_t value = 0;
    int64_t arrival_ns = 0;
    const std::vector<int64_t>* counts = nullptr;  // reduce-scatter / gather rows
  };
  // Posts the member's call; returns once the collective completed.
  void Arrive(int member, const Post& post);
  void Complete();
  // A reduce-scatter of inputs that are each one run over the whole buffer:
  // summed once for the group, every share a slice. Returns false (nothing
  // done) for any other inputs.
  bool ReduceScatterWholeInputs(const std::vector<int64_t>& counts, int64_t done);
  // An all-reduce of `count` elements whose inputs are each one run covering
  // them (what a symbolic input is): the sum is one value, added up once, and
  // every member's result is one run holding it. Returns false (nothing
  // done) for any other inputs, and in numeric mode.
  bool AllReduceWholeInputs(int64_t count, int64_t done);

  SimContext& ctx_;
  std::string name_;
  std::vector<int> ranks_;
  HopClass worst_hop_;
  std::vector<Post> posts_;
  std::vector<uint64_t> next_seq_;  // per member
  uint64_t pending_seq_ = 0;
  int posted_ = 0;
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
  SimContext& ctx_;
  int world_;
  // Keyed by from * world + to.
  absl::flat_hash_map<uint64_t, std::deque<Message>> queues_;
  std::vector<int> waiting_on_;  // per rank: source it waits for, or -1
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_NCCL_COMM_H_
