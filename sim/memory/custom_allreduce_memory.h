// The custom all-reduce (one node, peer-mapped staging buffers, per-block
// flag barriers) in simulated memory, running kernels/protocol/block_barrier.h.

#ifndef LOCKSTEP_SIM_MEMORY_CUSTOM_ALLREDUCE_MEMORY_H_
#define LOCKSTEP_SIM_MEMORY_CUSTOM_ALLREDUCE_MEMORY_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "dispatch/decision.h"
#include "kernels/protocol/lamport.h"
#include "kernels/protocol/memory_model.h"
#include "sim/memory/block_words.h"
#include "sim/memory/data.h"
#include "sim/memory/lamport_buffer.h"
#include "sim/memory/member_index.h"
#include "sim/memory/sim_context.h"

namespace lockstep {

class SimCustomAllReduce : public Waitable {
 public:
  SimCustomAllReduce(SimContext& ctx, std::string name, std::vector<int> peers);

  const std::string& name() const { return name_; }
  const std::vector<int>& peers() const { return peers_; }
  int MemberOf(int rank) const;
  // A replayed call of a CUDA graph on registered inputs: the member's own
  // input is its `input`-th captured one; it reads each peer's where row
  // `row` of its registration points.
  struct GraphSlot {
    int32_t input = 0;
    int32_t row = 0;
  };

  // Runs one custom all-reduce of `in` into `out` as `member`, launching
  // `decision.blocks` thread blocks; with `graph`, on registered graph inputs
  // instead of the staging buffer.
  protocol::ProtocolStatus RunAllReduce(int member, const DecisionRecord& decision,
                                        const SimTensor& in, SimTensor& out,
                                        const GraphSlot* graph = nullptr);

  // A call captured into a CUDA graph on `member`: its input's ordinal among
  // the member's captured ones, and the registration row it will read — the
  // count recorded before it (sgl-kernel custom_all_reduce.cuh allreduce():
  // `d_rank_data_base_ + graph_unreg_buffers_.size()`). `record`: whether the
  // member's first `unrecorded` captured inputs are never recorded for
  // registration (a fault: an allocator cache hit skipped the record,
  // ROCm/aiter #2638).
  GraphSlot CaptureGraphInput(int member, int64_t unrecorded);
  // The ordinals of the member's recorded inputs, in order.
  const std::vector<int32_t>& RecordedGraphInputs(int member) const {
    return members_[static_cast<size_t>(member)].graph_recorded;
  }

  // The registration of captured graph inputs (custom_all_reduce.py
  // register_graph_buffers): row r of `member` reads peer p's
  // rows[r][p]-th captured input (-1: a pointer to nothing of p's).
  void RegisterGraphInputs(int member, std::vector<std::vector<int32_t>> rows);

  std::string DescribeWait(int rank, int64_t detail) const override;
  std::vector<int> WaitsOn(int rank, int64_t detail) const override;
  bool WaitsOnLostWrite(int rank, int64_t detail) const override;
  bool IsKernelWait() const override { return true; }

 private:
  friend class CustomMem;
  // A flag write a fault destroyed (v2 pull: an arrival, phase its phase;
  // v2 push: a slot store, phase its half).
  struct LostFlag {
    int32_t writer;
    int32_t target;
    uint32_t phase;
    uint64_t epoch;
  };
  // Flags of blocks [begin, end) hold `epoch`.
  struct FlagRun {
    int32_t begin;
    int32_t end;
    uint64_t epoch;
  };
  // What a waiting member waits for.
  enum class WaitKind : uint8_t {
    kFlags,     // v1: a writer's barrier flags (wait_peer)
    kArrivals,  // v2 pull: its semaphores' arrival count (wait_phase)
    kSlot,      // v2 push: its push slot of writer wait_peer
  };
  struct Member {
    RunList staged;
    // Under relaxed memory, seen[q]: this member's staged buffer as member q
    // sees it (the stores that reached q); empty until the first stage.
    std::vector<RunList> seen;
    uint64_t epoch = 0;
    int32_t blocks = 0;  // grid of the call in progress
    // flags[phase][writer]: what writer's blocks last stored here (empty
    // until the member's first barrier, see Flags).
    std::vector<std::vector<FlagRun>> flags[2];
    // CUDA graphs: the member's captured inputs (what its replays wrote
    // there) and its registration.
    std::vector<RunList> graph_inputs;
    int32_t graph_captured = 0;
    std::vector<int32_t> graph_recorded;
    std::vector<std::vector<int32_t>> graph_rows;
    // v2 push plane: slots[half][writer], and the parity of the rank's
    // per-block counters (every block of a rank runs every call and flips
    // its counter, so all of them hold the same value: one models them).
    std::vector<LamportBuffer> slots[2];
    uint32_t push_counter = 0;
    // v2 pull plane: per block, the arrival word peers add to and the counter
    // the member reserves windows on (0 past every grid seen); and, for
    // reports only, how many arrivals each writer made here.
    BlockWords arrivals;
    BlockWords counters;
    std::vector<uint64_t> arrivals_from;
    bool waiting = false;
    WaitKind wait_kind = WaitKind::kFlags;
    uint32_t wait_phase = 0;
    int32_t wait_peer = -1;
    uint64_t wait_epoch = 0;
  };
  static void StoreFlags(std::vector<FlagRun>& runs, int32_t begin, int32_t end, uint64_t epoch);
  // flags[phase][writer] of `member`, allocating the member's table first.
  std::vector<FlagRun>& Flags(int32_t member, uint32_t phase, int32_t writer);
  // Member `writer`'s `blocks` flags of `phase` land at member `target`
  // holding `epoch`, waking it if it waits for them.
  void LandFlags(int32_t target, uint32_t phase, int32_t writer, int32_t blocks, uint64_t epoch);
  static bool FlagsHold(const std::vector<FlagRun>& runs, int32_t blocks, uint64_t epoch);
  // v2: member `target`'s push slot of `writer` in `half`, allocating the
  // member's slot table first.
  LamportBuffer& Slot(int32_t target, uint32_t half, int32_t writer);
  // v2 pull: member `writer`'s arrival of its first `blocks` blocks lands at
  // member `target`.
  void LandArrival(int32_t target, int32_t writer, int32_t blocks);
  // Wakes `target` if it waits for what just landed.
  void WakeIfWaiting(int32_t target, WaitKind kind, int32_t writer);
  // The pull barrier's wait condition at `member`: every block's arrival
  // word has moved `world` past its target (window + phase * world).
  bool ArrivalsHold(const Member& m, int32_t blocks, uint32_t phase) const;

  SimContext& ctx_;
  std::string name_;
  std::vector<int> peers_;
  std::vector<Member> members_;
  std::vector<LostFlag> lost_;
  std::vector<LostFlag> lost_pushes_;  // v2 push stores a fault destroyed (phase: the half)
  MemberIndex index_;                  // peers_ by rank
};

class CustomMem : public protocol::WholeRangeChunks {
 public:
  using Value = SimChunk;
  using Acc = Accumulator;

  CustomMem(SimCustomAllReduce& ar, int member, const SimTensor& in, SimTensor& out, int32_t blocks,
            const SimCustomAllReduce::GraphSlot* graph)
      : ar_(ar),
        ctx_(ar.ctx_),
        member_(member),
        rank_(ar.peers_[static_cast<size_t>(member)]),
        in_(in),
        out_(out),
        blocks_(blocks),
        graph_(graph) {}

  Value LoadInput(int64_t pos, int64_t len) {
    SimChunk c;
    in_.runs.Read(pos, pos + len, c);
    return c;
  }
  void Stage(int64_t pos, const Value& v);
  bool LoadStaged(int32_t peer, int64_t pos, int64_t len, Value* out);
  // A release fence (kernels/protocol/block_barrier.h): under relaxed
  // memory, every store this rank makes afterwards reaches its peer after
  // every store it made before.
  void Release();
  void Signal(int32_t peer, uint32_t phase, uint64_t epoch);
  bool WaitFlags(int32_t peer, uint32_t phase, uint64_t epoch);
  uint64_t NextEpoch();
  // One simulated rank waits for its peers one after the other: nothing to join.
  bool EndBarrier(bool ok) const { return ok; }
  // v2 push plane (kernels/protocol/custom_v2.h).
  uint32_t PushHalf();
  void ClearMarkers(Value&) const {}  // the model's data never reads as the +0 marker
  void PushSlot(int32_t peer, uint32_t half, int64_t pos, const Value& v);
  bool PollSlot(int32_t writer, uint32_t half, int64_t pos, int64_t len, Value* out);
  void ResetSlot(int32_t writer, uint32_t half, int64_t pos, int64_t len);
  void FlipHalf(uint32_t half);
  // v2 pull plane.
  uint32_t ReserveWindow(uint32_t arrivals);
  void StoreStaged(int32_t peer, int64_t pos, const Value& v);
  void Arrive(int32_t peer, uint32_t phase);
  bool WaitArrivals(uint32_t phase, uint32_t target);
  void SyncBlock() const {}  // one simulated rank is one block
  // The staging copy's kernel ended: a full fence, as the end of RunAllReduce.
  void EndKernel();
  void EndCall(uint64_t) const {}  // NextEpoch already counted the call
  // The reference kernels sum in fp32 and round once (SGLang 0.5.23
  // sgl_kernel/vec.cuh reduce_vec, kFP32Acc; v1's packed_reduce upcasts too),
  // as lockstep's GPU kernel does (GpuCustomBackend).
  Acc Zero() const {
    Acc a;
    a.fp32 = true;
    return a;
  }
  void Add(Acc& acc, const Value& v) { AccumulatorAdd(ctx_, acc, v); }
  Value Finish(const Acc& acc) { return AccumulatorFinish(ctx_, acc); }
  void StoreOutput(int64_t pos, const Value& v) {
    WriteChunk(out_.runs, pos, v, ctx_.Clock(rank_), rank_);
  }
  protocol::ProtocolStatus Failure() const {
    protocol::ProtocolStatus s;
    s.error = protocol::ProtocolError::kAborted;
    return s;
  }

 private:
  SimCustomAllReduce& ar_;
  SimContext& ctx_;
  int member_;
  int rank_;
  const SimTensor& in_;
  SimTensor& out_;
  int32_t blocks_;
  const SimCustomAllReduce::GraphSlot* graph_;  // null: the staging buffer
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_CUSTOM_ALLREDUCE_MEMORY_H_
