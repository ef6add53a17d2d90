// One-shot Lamport all-reduce: every rank pushes its whole input into its slot
// of every peer's receive buffer, polls its own buffer until every slot is
// free of the sentinel, and sums the slots in rank order, so every rank
// computes bitwise the same result.

#ifndef LOCKSTEP_KERNELS_PROTOCOL_ONE_SHOT_H_
#define LOCKSTEP_KERNELS_PROTOCOL_ONE_SHOT_H_

#include "kernels/protocol/lamport.h"
#include "kernels/protocol/memory_model.h"

namespace lockstep::protocol {

// Slot of `writer` in a receive buffer: [writer * elems, (writer + 1) * elems).
// The offset depends on the call's element count, so ranks that disagree on
// it write and poll different places.
LS_HD LS_INLINE int64_t OneShotSlotOffset(int32_t writer, int64_t elems) {
  return static_cast<int64_t>(writer) * elems;
}

// Elements a one-shot call leaves in each rank's receive buffer.
LS_HD LS_INLINE int64_t OneShotFootprint(int32_t world, int64_t elems) {
  return static_cast<int64_t>(world) * elems;
}

template <class Mem>
LS_HD ProtocolStatus OneShotAllReduce(Mem& mem, const AllReduceArgs& a) {
  const LamportCall call = BeginLamportCall(mem.State(), a.buffers);

  // Push: sanitised input into slot `rank` of every peer, starting with the
  // next peer so that ranks do not all write to peer 0 first.
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    typename Mem::Value v = mem.LoadInput(pos, mem.ChunkLen(pos, a.elems));
    if (a.sanitize) mem.Sanitize(v);
    for (int32_t k = 1; k <= a.world; ++k) {
      const int32_t peer = (a.rank + k) % a.world;
      mem.Push(peer, call.buffer, OneShotSlotOffset(a.rank, a.elems) + pos, v);
    }
  }

  if (!ClearPreviousBuffer(mem, call, a, OneShotFootprint(a.world, a.elems))) {
    return mem.Failure();
  }

  // Poll and reduce in fixed rank order. `v` is reused: Wait overwrites it
  // (the simulator's value keeps its storage between peers).
  typename Mem::Value v;
  for (int64_t pos = mem.FirstChunk(0); pos < a.elems; pos = mem.NextChunk(pos, a.elems)) {
    const int64_t len = mem.ChunkLen(pos, a.elems);
    typename Mem::Acc acc = mem.Zero();
    for (int32_t i = 0; i < a.world; ++i) {
      const int32_t p = SumOrderSlot(a, i);
      if (!mem.Wait(call.buffer, OneShotSlotOffset(p, a.elems) + pos, len, p, &v)) {
        return mem.Failure();
      }
      mem.Add(acc, v);
    }
    mem.StoreOutput(pos, mem.Finish(acc));
  }

  if (mem.ArriveLast()) {
    EndLamportCall(mem.State(), OneShotFootprint(a.world, a.elems), a.buffers);
  }
  return ProtocolStatus{};
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_ONE_SHOT_H_
