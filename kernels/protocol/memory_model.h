// The memory-access policy the protocols are written against.
//
// The protocols (one_shot.h, two_shot.h, block_barrier.h) are templates over a
// type `Mem` that provides the operations below. The CUDA kernels instantiate
// them with device memory (one chunk = one thread's vector, system-scope
// stores into peer memory, volatile polls bounded by %globaltimer); the
// simulator instantiates them with simulated peer memory (one chunk = a whole
// range, a poll that cannot succeed suspends the rank until the memory it
// watches changes). The protocol logic — slot offsets, sanitising, the
// sentinel test, buffer rotation, clear sizes, rank-order reduction, two-shot
// ownership, flag epochs — exists once, here.
//
//   using Value;  // the contents of one chunk, as loaded
//   using Acc;    // a running sum of Values
//
//   // Chunk iteration over [lo, hi):
//   //   for (p = FirstChunk(lo); p < hi; p = NextChunk(p, hi))
//   // where the chunk at p holds ChunkLen(p, hi) elements: p and the ones after
//   // it in the policy's pattern (contiguous, or vectors a block-width apart
//   // so that a warp's accesses coalesce), all below hi; a buffer offset o
//   // given for the chunk at p addresses the same pattern shifted by o - p.
//   // The protocols only forward positions and lengths, so which chunks a
//   // thread visits and their shape are the policy's business.
//   int64_t FirstChunk(int64_t lo) const;
//   int64_t NextChunk(int64_t pos, int64_t hi) const;
//   int64_t ChunkLen(int64_t pos, int64_t hi) const;
//
//   Value LoadInput(int64_t pos, int64_t len);                // this rank's input
//   void Sanitize(Value& v);                                  // SanitizeBits on every element
//   void Push(int32_t peer, uint32_t buffer, int64_t offset, const Value& v);   // into peer's
//   buffer
//   // Polls this rank's `buffer` at [offset, offset + len) until no element is
//   // the sentinel (IsSentinel with the call's test); `writer` is the peer
//   // expected to write it. Returns false if the wait was abandoned (bounded
//   // wait expired or abort); the Mem then holds the failure status.
//   bool Wait(uint32_t buffer, int64_t offset, int64_t len, int32_t writer, Value* out);
//   void Clear(uint32_t buffer, int64_t offset, int64_t len); // write the sentinel
//   bool VerifyCleared(uint32_t buffer, int64_t offset, int64_t len);  // all sentinel again?
//                                                             // (false: Failure() says so)
//   Acc Zero();
//   void Add(Acc& acc, const Value& v);                       // in the order called
//   Value Finish(const Acc& acc);                             // convert to the element type
//   void StoreOutput(int64_t pos, const Value& v);
//   LamportState& State();                                    // this rank's control block
//   bool ArriveLast();   // this block finished the call; true for the last block
//   ProtocolStatus Failure() const;                           // after a Wait returned false
//
// Visibility. A store into a peer's memory (Push, Signal; Stage as peers read
// it) becomes visible there later, and a rank's stores need not become
// visible in the order it made them: NVLink and MNNVL order them only where
// the protocol asks. What a protocol may rely on:
//   - a poll (Wait, WaitFlags) that sees a value sees all of that store;
//   - two stores of one rank to the same place are seen in program order;
//   - Release() (block_barrier.h): every store the rank made before it is
//     visible at every peer before any store it makes after it (on GPUs
//     __threadfence_system, or st.release), and a flag wait is an acquire
//     load (ld.acquire.sys), so loads after it see what was released;
//   - the end of a kernel is a full fence: the next call sees everything.
// The Lamport protocols need nothing more: every element is its own flag, so
// a poll that sees no sentinel has the data. The custom all-reduce's peers
// read the staged buffer after the start flag, so its barrier releases. The
// simulator checks this under `memory: relaxed` (docs/SIMULATOR.md), where
// stores land in pieces, late and out of order, within these rules only.

#ifndef LOCKSTEP_KERNELS_PROTOCOL_MEMORY_MODEL_H_
#define LOCKSTEP_KERNELS_PROTOCOL_MEMORY_MODEL_H_

#include "kernels/protocol/lamport.h"

namespace lockstep::protocol {

// The simplest chunk policy: one chunk is the whole range (the simulator's
// memory models, which move ranges, not vectors).
struct WholeRangeChunks {
  int64_t FirstChunk(int64_t lo) const { return lo; }
  int64_t NextChunk(int64_t, int64_t hi) const { return hi; }
  int64_t ChunkLen(int64_t pos, int64_t hi) const { return hi - pos; }
};

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_MEMORY_MODEL_H_
