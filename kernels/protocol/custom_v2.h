// SGLang 0.5.23's custom all-reduce (CustomAllReduceV2), the default on one
// node: two families of algorithms over two planes of symmetric memory
// (kernels/jit/csrc/distributed/custom_all_reduce.cuh and
// sgl_kernel/distributed/communicator.cuh @ 0.5.23). Which algorithm a call
// runs is the dispatch core's choice (dispatch/custom_launch.h).
//
// Push plane (1shot_push). Every rank owns 2 x world slots: two halves of one
// slot per writer. A call's half is its block's counter parity: every block
// of a rank runs every call, and flips its counter at the end
// (PushEpoch::flip), so consecutive calls alternate halves and a peer one
// call ahead never writes the half a rank still drains. The slots start as
// +0 words (the "empty" marker); a writer rewrites each +0 32-bit word of its
// data to -0 (LamportTrait::clear_pos_zero, kAtom = 4: numerically the same)
// and pushes it into its slot at every rank, itself included; a reader polls
// its slots until no word holds +0, sums them in rank order, stores the sum
// and writes +0 back over what it read. No flags, no barrier: a missing peer
// leaves its slot empty, and its readers poll forever (SGLang's polls are
// unbounded; lockstep's are bounded and name the writer).
//
// Pull plane (1shot_pull, 2shot_pull). Every rank owns a workspace and one
// semaphore per block: an arrival word every peer adds to and a counter only
// the rank reads. A call reserves a window on its counter (counter +=
// 2 x world, the old value is the window), and a barrier phase n is: every
// member adds 1 to the arrival word of the same block at every member,
// itself included, then waits until its own arrival word has moved world
// past window + n x world (Barrier, communicator.cuh:158-202). The barrier
// counts arrivals; it does not name them, so a rank that arrives twice
// stands in for one that never arrives. Eager calls stage the input into the
// workspace first (a copy before the kernel); captured calls read the
// inputs every peer registered after capture (graph rows). 1shot_pull sums
// every peer's workspace into its output between the two phases; 2shot_pull
// sums one shard (its rank's share of whole 16-byte vectors) and stores the
// sum into every peer's workspace, and after the second phase — released, so
// that every peer's shard stores are visible — copies its whole workspace
// out (a captured call's workspace is its input, reduced in place).
//
// 2shot_push (SM10x at 4 and 8 ranks) is the same push plane used as a
// reduce-scatter and an all-gather: chunk c of the message is rank c's; a
// slot holds two halves of one chunk, the writer's partial of the reader's
// chunk and then the writer's reduced chunk. Each rank pushes its partial of
// every peer's chunk to that peer, reduces its own chunk (its own partial
// from its input), remaps the sum's +0 words as a writer does — so every rank
// holds the same bits — pushes it to every peer and drains theirs
// (all_reduce_2shot_push_kernel, custom_all_reduce.cuh:214-321).
//
// Not written here: the multicast form of 2shot_pull, which lockstep never
// runs (docs/FIDELITY.md).
//
// Memory policy (in addition to memory_model.h's chunk iteration, LoadInput,
// Zero, Add, Finish, StoreOutput and Failure):
//   push:
//   uint32_t PushHalf();                                        // counter & 1
//   void ClearMarkers(Value& v);                                // +0 words -> -0
//   // `offset`: elements into the slot (memory_model.h: the chunk's pattern shifted)
//   void PushSlot(int32_t peer, uint32_t half, int64_t offset, const Value& v);
//   bool PollSlot(int32_t writer, uint32_t half, int64_t offset, int64_t len, Value* out);
//   void ResetSlot(int32_t writer, uint32_t half, int64_t offset, int64_t len);
//   void FlipHalf(uint32_t half);                               // counter = half ^ 1
//   pull:
//   uint32_t ReserveWindow(uint32_t arrivals);  // counter += arrivals; the old value
//   void Stage(int64_t pos, const Value& v);    // into this rank's workspace
//   bool LoadStaged(int32_t peer, int64_t pos, int64_t len, Value* out);
//   void StoreStaged(int32_t peer, int64_t pos, const Value& v);  // into peer's workspace
//   void Release();                              // as block_barrier.h
//   void SyncBlock();                            // the block's threads meet (no fence)
//   void Arrive(int32_t peer, uint32_t phase);   // +1 on peer's arrival word of my block
//   bool WaitArrivals(uint32_t phase, uint32_t target);  // until word - target >= world;
//                                                        // target = window + phase * world
//   bool EndBarrier(bool ok);                    // as block_barrier.h
//   void EndKernel();  // PullCall only: the staging copy's kernel ended (a full fence)

#ifndef LOCKSTEP_KERNELS_PROTOCOL_CUSTOM_V2_H_
#define LOCKSTEP_KERNELS_PROTOCOL_CUSTOM_V2_H_

#include "kernels/protocol/lamport.h"

namespace lockstep::protocol {

// The pull algorithms' two barrier phases, and the arrivals a call reserves
// (num_arrives = 2 in both pull kernels).
inline constexpr uint32_t kPullPhases = 2;

// A range of a message's elements.
struct ElemRange {
  int64_t begin = 0;
  int64_t end = 0;
};

// The elements of rank `rank`'s 2shot_pull shard: its share of the message's
// whole 16-byte vectors, the first `remainder` ranks one vector more
// (all_reduce_2shot_pull_kernel, custom_all_reduce.cuh:358-361).
LS_HD LS_INLINE ElemRange TwoShotPullShard(int32_t rank, int32_t world, int64_t elems,
                                           int64_t vector_elems) {
  const int64_t vectors = elems / vector_elems;
  const int64_t avg = vectors / world;
  const int64_t rem = vectors % world;
  const int64_t first = rank * avg + (rank < rem ? rank : rem);
  const int64_t count = avg + (rank < rem ? 1 : 0);
  return ElemRange{first * vector_elems, (first + count) * vector_elems};
}

template <class Mem>
LS_HD ProtocolStatus OneShotPushAllReduce(Mem& mem, const AllReduceArgs& a) {
  const uint32_t half = mem.PushHalf();
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    typename Mem::Value v = mem.LoadInput(pos, mem.ChunkLen(pos, a.elems));
    mem.ClearMarkers(v);
    for (int32_t k = 1; k <= a.world; ++k) mem.PushSlot((a.rank + k) % a.world, half, pos, v);
  }
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    const int64_t len = mem.ChunkLen(pos, a.elems);
    typename Mem::Acc acc = mem.Zero();
    for (int32_t p = 0; p < a.world; ++p) {
      typename Mem::Value v;
      if (!mem.PollSlot(p, half, pos, len, &v)) return mem.Failure();
      mem.Add(acc, v);
    }
    mem.StoreOutput(pos, mem.Finish(acc));
    for (int32_t p = 0; p < a.world; ++p) mem.ResetSlot(p, half, pos, len);
  }
  mem.FlipHalf(half);
  return ProtocolStatus{};
}

// The elements of chunk `c` in 2shot_push: ceil(vectors / world) whole
// 16-byte vectors each, the last chunks short or empty (get_chunk_len).
LS_HD LS_INLINE ElemRange TwoShotPushChunk(int32_t c, int32_t world, int64_t elems,
                                           int64_t vector_elems) {
  const int64_t vectors = elems / vector_elems;
  const int64_t chunk = (vectors + world - 1) / world;
  const int64_t begin = c * chunk < vectors ? c * chunk : vectors;
  const int64_t end = begin + chunk < vectors ? begin + chunk : vectors;
  return ElemRange{begin * vector_elems, end * vector_elems};
}

// Elements of one half of a 2shot_push slot.
LS_HD LS_INLINE int64_t TwoShotPushHalfElems(int32_t world, int64_t elems, int64_t vector_elems) {
  const int64_t vectors = elems / vector_elems;
  return (vectors + world - 1) / world * vector_elems;
}

template <class Mem>
LS_HD ProtocolStatus TwoShotPushAllReduce(Mem& mem, const AllReduceArgs& a, int64_t vector_elems) {
  const uint32_t half = mem.PushHalf();
  const int64_t gathered = TwoShotPushHalfElems(a.world, a.elems, vector_elems);
  // Reduce-scatter: this rank's partial of each peer's chunk, to its owner.
  for (int32_t k = 1; k < a.world; ++k) {
    const int32_t peer = (a.rank + k) % a.world;
    const ElemRange c = TwoShotPushChunk(peer, a.world, a.elems, vector_elems);
    for (int64_t pos = mem.FirstChunk(c.begin); pos < c.end; pos = mem.NextChunk(pos, c.end)) {
      typename Mem::Value v = mem.LoadInput(pos, mem.ChunkLen(pos, c.end));
      mem.ClearMarkers(v);
      mem.PushSlot(peer, half, pos - c.begin, v);
    }
  }
  // This rank's chunk: every peer's partial and its own, in rank order; the
  // sum to every peer and to the output.
  const ElemRange mine = TwoShotPushChunk(a.rank, a.world, a.elems, vector_elems);
  for (int64_t pos = mem.FirstChunk(mine.begin); pos < mine.end;
       pos = mem.NextChunk(pos, mine.end)) {
    const int64_t len = mem.ChunkLen(pos, mine.end);
    typename Mem::Acc acc = mem.Zero();
    for (int32_t p = 0; p < a.world; ++p) {
      typename Mem::Value v;
      if (p == a.rank) {
        v = mem.LoadInput(pos, len);
      } else if (!mem.PollSlot(p, half, pos - mine.begin, len, &v)) {
        return mem.Failure();
      }
      mem.Add(acc, v);
    }
    typename Mem::Value sum = mem.Finish(acc);
    mem.ClearMarkers(sum);
    for (int32_t k = 1; k < a.world; ++k) {
      mem.PushSlot((a.rank + k) % a.world, half, gathered + pos - mine.begin, sum);
    }
    mem.StoreOutput(pos, sum);
    for (int32_t p = 0; p < a.world; ++p) {
      if (p != a.rank) mem.ResetSlot(p, half, pos - mine.begin, len);
    }
  }
  // All-gather: every peer's reduced chunk.
  for (int32_t k = 1; k < a.world; ++k) {
    const int32_t peer = (a.rank + k) % a.world;
    const ElemRange c = TwoShotPushChunk(peer, a.world, a.elems, vector_elems);
    for (int64_t pos = mem.FirstChunk(c.begin); pos < c.end; pos = mem.NextChunk(pos, c.end)) {
      const int64_t len = mem.ChunkLen(pos, c.end);
      typename Mem::Value v;
      if (!mem.PollSlot(peer, half, gathered + pos - c.begin, len, &v)) return mem.Failure();
      mem.StoreOutput(pos, v);
      mem.ResetSlot(peer, half, gathered + pos - c.begin, len);
    }
  }
  mem.FlipHalf(half);
  return ProtocolStatus{};
}

// One phase of the counting barrier; `release`: the arrivals are released
// (arrive_rel_acq) and the wait acquires.
template <class Mem>
LS_HD bool CountingBarrier(Mem& mem, const AllReduceArgs& a, uint32_t window, uint32_t phase,
                           bool release) {
  // Every thread of the block finished what came before the arrival (its
  // loads of peers' buffers too: a peer that passes this phase may overwrite
  // them), and with `release` its stores are visible first
  // (custom_all_reduce.cuh:348-349, 380-382: __syncthreads before arriving).
  if (release) {
    mem.Release();
  } else {
    mem.SyncBlock();
  }
  for (int32_t k = 1; k <= a.world; ++k) mem.Arrive((a.rank + k) % a.world, phase);
  const bool ok = mem.WaitArrivals(phase, window + phase * static_cast<uint32_t>(a.world));
  return mem.EndBarrier(ok);
}

// An eager pull call's staging copy (a kernel of its own before the
// all-reduce kernel: custom_all_reduce.cuh:510, 519).
template <class Mem>
LS_HD void StagePullInput(Mem& mem, const AllReduceArgs& a) {
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    mem.Stage(pos, mem.LoadInput(pos, mem.ChunkLen(pos, a.elems)));
  }
}

// The all-reduce kernel of 1shot_pull (`two_shot` false) and 2shot_pull,
// over the staged workspaces or, for a captured call, the registered inputs.
// `vector_elems`: elements per 16-byte vector. The staging copy finished
// before it starts (stream order), so its first phase needs no release.
template <class Mem>
LS_HD ProtocolStatus PullAllReduce(Mem& mem, const AllReduceArgs& a, bool two_shot,
                                   int64_t vector_elems) {
  const uint32_t window = mem.ReserveWindow(kPullPhases * static_cast<uint32_t>(a.world));
  if (!CountingBarrier(mem, a, window, 0, /*release=*/false)) return mem.Failure();
  const ElemRange shard =
      two_shot ? TwoShotPullShard(a.rank, a.world, a.elems, vector_elems) : ElemRange{0, a.elems};
  for (int64_t pos = mem.FirstChunk(shard.begin); pos < shard.end;
       pos = mem.NextChunk(pos, shard.end)) {
    const int64_t len = mem.ChunkLen(pos, shard.end);
    typename Mem::Acc acc = mem.Zero();
    for (int32_t p = 0; p < a.world; ++p) {
      typename Mem::Value v;
      if (!mem.LoadStaged(p, pos, len, &v)) return mem.Failure();
      mem.Add(acc, v);
    }
    const typename Mem::Value sum = mem.Finish(acc);
    if (two_shot) {
      for (int32_t k = 1; k <= a.world; ++k) mem.StoreStaged((a.rank + k) % a.world, pos, sum);
    } else {
      mem.StoreOutput(pos, sum);
    }
  }
  // 2shot_pull: every peer's shard stores into this rank's workspace are
  // visible after the second phase only if they were released before it.
  if (!CountingBarrier(mem, a, window, 1, two_shot && a.release_flags)) return mem.Failure();
  return ProtocolStatus{};
}

// 2shot_pull's copy of the reduced workspace into the output: a kernel of its
// own after the all-reduce kernel (custom_all_reduce.cuh:538), so every
// block's second phase has passed
// (for a captured call the workspace is the input, reduced in place, and the
// copy reads it back).
template <class Mem>
LS_HD ProtocolStatus CopyPullOutput(Mem& mem, const AllReduceArgs& a) {
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    typename Mem::Value v;
    if (!mem.LoadStaged(a.rank, pos, mem.ChunkLen(pos, a.elems), &v)) return mem.Failure();
    mem.StoreOutput(pos, v);
  }
  return ProtocolStatus{};
}

// One whole pull call as one rank runs it: the staging copy, the all-reduce
// kernel, and 2shot_pull's copy out. On registered inputs (a captured call)
// there is no staging copy — the input already is the buffer peers read —
// and Stage only says so (the simulator records what the input holds; the
// GPU launches no copy: LaunchCustomPull).
template <class Mem>
LS_HD ProtocolStatus PullCall(Mem& mem, const AllReduceArgs& a, bool two_shot,
                              int64_t vector_elems) {
  StagePullInput(mem, a);
  mem.EndKernel();
  const ProtocolStatus s = PullAllReduce(mem, a, two_shot, vector_elems);
  if (!s.ok() || !two_shot) return s;
  return CopyPullOutput(mem, a);
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_CUSTOM_V2_H_
