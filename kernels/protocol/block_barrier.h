// The custom all-reduce (vLLM / SGLang custom_all_reduce): each rank stages its
// input in a buffer every peer has mapped, meets every peer at a barrier,
// reads and sums all peers' staged inputs in rank order, and meets them again
// so that no staged buffer is overwritten while a peer still reads it.
//
// The barrier uses one flag per (thread block, peer): block b of rank r writes
// the call's epoch into flags[b][r] of every peer, then waits until its own
// flags[b][p] hold the epoch for every peer p. Block b only ever meets block b
// of its peers, so every rank must launch the same number of blocks: a rank
// that launches fewer leaves its peers' extra blocks waiting forever
// (vLLM #43616).
//
// Ordering: peers read the staged buffer after they see the start flag, so
// the staged stores must be visible at a peer before the flag is. The barrier
// declares it: a release fence before the flags (AllReduceArgs::release_flags)
// and an acquire in every flag wait (memory_model.h, "Visibility").
//
// Memory policy (in addition to the chunk iteration of memory_model.h):
//   void Stage(int64_t pos, const Value& v);              // into my staged buffer
//   bool LoadStaged(int32_t peer, int64_t pos, int64_t len, Value* out);
//   void Release();  // fence: my earlier stores are visible at every peer before my later ones
//   void Signal(int32_t peer, uint32_t phase, uint64_t epoch);  // my blocks' flags at peer
//   bool WaitFlags(int32_t peer, uint32_t phase, uint64_t epoch);  // peer's flags at my blocks;
//                                                                  // an acquire load
//   uint64_t NextEpoch();                                  // 1, 2, ... per call on this rank
//   bool EndBarrier(bool ok);  // after a barrier's waits: whether every wait of this
//                              // block succeeded (a GPU block's threads wait for
//                              // different peers and meet here)
//   void EndCall(uint64_t epoch);  // the call completed: the next NextEpoch() is epoch + 1
//   + LoadInput, Zero, Add, Finish, StoreOutput, Failure as in memory_model.h
//
// With CUDA graphs the staged input is the call's own input tensor,
// registered with every peer after capture (custom_all_reduce.py
// register_graph_buffers): Stage then stores nothing, and LoadStaged reads
// where the call's registration row points.

#ifndef LOCKSTEP_KERNELS_PROTOCOL_BLOCK_BARRIER_H_
#define LOCKSTEP_KERNELS_PROTOCOL_BLOCK_BARRIER_H_

#include "kernels/protocol/lamport.h"

namespace lockstep::protocol {

inline constexpr uint32_t kBarrierStart = 0;
inline constexpr uint32_t kBarrierEnd = 1;

template <class Mem>
LS_HD bool BlockBarrier(Mem& mem, int32_t rank, int32_t world, uint32_t phase, uint64_t epoch,
                        bool release) {
  // The flags are released: what this rank stored before (its staged input
  // at the start barrier) is visible at a peer before its flag is.
  if (release) mem.Release();
  for (int32_t k = 1; k <= world; ++k) mem.Signal((rank + k) % world, phase, epoch);
  bool ok = true;
  for (int32_t p = 0; p < world && ok; ++p) ok = mem.WaitFlags(p, phase, epoch);
  return mem.EndBarrier(ok);
}

template <class Mem>
LS_HD ProtocolStatus CustomAllReduce(Mem& mem, const AllReduceArgs& a) {
  const uint64_t epoch = mem.NextEpoch();
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    mem.Stage(pos, mem.LoadInput(pos, mem.ChunkLen(pos, a.elems)));
  }
  if (!BlockBarrier(mem, a.rank, a.world, kBarrierStart, epoch, a.release_flags)) {
    return mem.Failure();
  }
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    const int64_t len = mem.ChunkLen(pos, a.elems);
    typename Mem::Acc acc = mem.Zero();
    for (int32_t p = 0; p < a.world; ++p) {
      typename Mem::Value v;
      if (!mem.LoadStaged(p, pos, len, &v)) return mem.Failure();
      mem.Add(acc, v);
    }
    mem.StoreOutput(pos, mem.Finish(acc));
  }
  if (!BlockBarrier(mem, a.rank, a.world, kBarrierEnd, epoch, a.release_flags)) {
    return mem.Failure();
  }
  mem.EndCall(epoch);
  return ProtocolStatus{};
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_BLOCK_BARRIER_H_
