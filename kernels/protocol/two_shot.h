// Two-shot Lamport all-reduce: reduce-scatter by ownership, then all-gather.
//
// The message is cut into `world` owner ranges of TwoShotChunk() elements;
// rank j owns [j * chunk, min(elems, (j + 1) * chunk)). Stage 1: every rank
// pushes each owner's range into slot `rank` of that owner's stage-1 region.
// Stage 2: each owner polls its stage-1 slots, sums them in rank order,
// sanitises the sum and pushes it into the stage-2 region of every peer.
// Stage 3: every rank polls its stage-2 region, owner by owner. Every rank
// gets the owner's bits, so results agree bitwise across ranks.
//
// Receive-buffer layout of one call:
//   [0, world * chunk)                   stage 1: slot p = writer p's part of my range
//   [world * chunk, world * chunk + elems) stage 2: the reduced message

#ifndef LOCKSTEP_KERNELS_PROTOCOL_TWO_SHOT_H_
#define LOCKSTEP_KERNELS_PROTOCOL_TWO_SHOT_H_

#include "kernels/protocol/lamport.h"
#include "kernels/protocol/memory_model.h"
#include "kernels/protocol/one_shot.h"

namespace lockstep::protocol {

// Owner ranges are multiples of this many elements (16 bytes of bf16), so a
// vectorised kernel never splits a vector between owners.
inline constexpr int64_t kTwoShotAlign = 8;

LS_HD LS_INLINE int64_t TwoShotChunk(int32_t world, int64_t elems) {
  const int64_t per_rank = (elems + world - 1) / world;
  return (per_rank + kTwoShotAlign - 1) / kTwoShotAlign * kTwoShotAlign;
}

LS_HD LS_INLINE int64_t TwoShotOwnerBegin(int32_t owner, int32_t world, int64_t elems) {
  const int64_t begin = static_cast<int64_t>(owner) * TwoShotChunk(world, elems);
  return begin < elems ? begin : elems;
}

LS_HD LS_INLINE int64_t TwoShotOwnerEnd(int32_t owner, int32_t world, int64_t elems) {
  return TwoShotOwnerBegin(owner + 1, world, elems);
}

LS_HD LS_INLINE int64_t TwoShotStage2Offset(int32_t world, int64_t elems) {
  return static_cast<int64_t>(world) * TwoShotChunk(world, elems);
}

LS_HD LS_INLINE int64_t TwoShotFootprint(int32_t world, int64_t elems) {
  return TwoShotStage2Offset(world, elems) + elems;
}

template <class Mem>
LS_HD ProtocolStatus TwoShotAllReduce(Mem& mem, const AllReduceArgs& a) {
  const LamportCall call = BeginLamportCall(mem.State(), a.buffers);
  const int64_t chunk = TwoShotChunk(a.world, a.elems);
  const int64_t stage2 = TwoShotStage2Offset(a.world, a.elems);

  // Stage 1: each owner's range into slot `rank` of that owner's buffer.
  for (int32_t k = 1; k <= a.world; ++k) {
    const int32_t owner = (a.rank + k) % a.world;
    const int64_t lo = TwoShotOwnerBegin(owner, a.world, a.elems);
    const int64_t hi = TwoShotOwnerEnd(owner, a.world, a.elems);
    for (int64_t pos = mem.FirstChunk(lo); pos < hi; pos = mem.NextChunk(pos, hi)) {
      typename Mem::Value v = mem.LoadInput(pos, mem.ChunkLen(pos, hi));
      if (a.sanitize) mem.Sanitize(v);
      mem.Push(owner, call.buffer, static_cast<int64_t>(a.rank) * chunk + (pos - lo), v);
    }
  }

  if (!ClearPreviousBuffer(mem, call, a, TwoShotFootprint(a.world, a.elems))) {
    return mem.Failure();
  }

  // Stage 2: reduce my range in rank order and push it to everyone. `v` is
  // reused here and in stage 3: Wait overwrites it (the simulator's value
  // keeps its storage from poll to poll, as in OneShotAllReduce).
  typename Mem::Value v;
  const int64_t my_lo = TwoShotOwnerBegin(a.rank, a.world, a.elems);
  const int64_t my_hi = TwoShotOwnerEnd(a.rank, a.world, a.elems);
  for (int64_t pos = mem.FirstChunk(my_lo); pos < my_hi; pos = mem.NextChunk(pos, my_hi)) {
    const int64_t len = mem.ChunkLen(pos, my_hi);
    typename Mem::Acc acc = mem.Zero();
    for (int32_t i = 0; i < a.world; ++i) {
      const int32_t p = SumOrderSlot(a, i);
      if (!mem.Wait(call.buffer, static_cast<int64_t>(p) * chunk + (pos - my_lo), len, p, &v)) {
        return mem.Failure();
      }
      mem.Add(acc, v);
    }
    typename Mem::Value sum = mem.Finish(acc);
    mem.Sanitize(sum);  // a sum can round to −0 in a narrow type
    for (int32_t k = 1; k <= a.world; ++k) {
      mem.Push((a.rank + k) % a.world, call.buffer, stage2 + pos, sum);
    }
  }

  // Stage 3: gather every owner's reduced range.
  for (int32_t owner = 0; owner < a.world; ++owner) {
    const int64_t lo = TwoShotOwnerBegin(owner, a.world, a.elems);
    const int64_t hi = TwoShotOwnerEnd(owner, a.world, a.elems);
    for (int64_t pos = mem.FirstChunk(lo); pos < hi; pos = mem.NextChunk(pos, hi)) {
      if (!mem.Wait(call.buffer, stage2 + pos, mem.ChunkLen(pos, hi), owner, &v)) {
        return mem.Failure();
      }
      mem.StoreOutput(pos, v);
    }
  }

  if (mem.ArriveLast()) {
    EndLamportCall(mem.State(), TwoShotFootprint(a.world, a.elems), a.buffers);
  }
  return ProtocolStatus{};
}

// Receive-buffer size (elements) a workspace needs for calls of up to
// `max_elems` elements per rank with either algorithm.
LS_HD LS_INLINE int64_t LamportBufferElems(int32_t world, int64_t max_elems) {
  const int64_t one_shot = OneShotFootprint(world, max_elems);
  const int64_t two_shot = TwoShotFootprint(world, max_elems);
  return one_shot > two_shot ? one_shot : two_shot;
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_TWO_SHOT_H_
