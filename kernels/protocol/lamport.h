// The Lamport protocol's invariants, shared by the one-shot and two-shot
// all-reduces: the −0 sentinel, input sanitising, and the rotation of three
// buffers with a control block (buffer index, arrival counter, clear size).
//
// Every rank owns kLamportBuffers receive buffers, filled with −0 at creation.
// A call k writes into buffer k % 3 of its peers and polls its own buffer k % 3
// until no element holds the sentinel. While it runs, it clears buffer
// (k - 1) % 3 (the one it read during call k - 1) for the size call k - 1
// wrote. A peer can be at most one call ahead (it cannot finish call k + 1
// without this rank's call k + 1 data), so it only ever writes buffer
// (k + 1) % 3, which call k - 1 cleared. Three buffers are the fewest for which
// clearing never races with a fast peer's writes.

#ifndef LOCKSTEP_KERNELS_PROTOCOL_LAMPORT_H_
#define LOCKSTEP_KERNELS_PROTOCOL_LAMPORT_H_

#include <stdint.h>

#include "kernels/protocol/element.h"
#include "kernels/protocol/platform.h"

namespace lockstep::protocol {

inline constexpr uint32_t kLamportBuffers = 3;

// How a poll decides that an element still holds the sentinel.
enum class SentinelTest : uint8_t {
  // Reference: the element's bits equal −0's bits exactly.
  kExactBits = 0,
  // `v == 0 && signbit(v)`: under flush-to-zero a negative subnormal compares
  // equal to zero and has its sign bit set, so a peer's legitimate negative
  // subnormal looks like the sentinel and the poll never ends (the hazard
  // FlashInfer's MNNVL kernels comment on). Kept to model that bug.
  kZeroAndSignbit = 1,
};

// Whether `bits` (an element of type `e`) reads as the sentinel. `ftz`: the
// comparison runs with flush-to-zero on.
LS_HD LS_INLINE bool IsSentinel(uint32_t bits, Elem e, SentinelTest test, bool ftz) {
  if (test == SentinelTest::kExactBits) return bits == NegZeroBits(e);
  const uint32_t seen = ftz ? FlushSubnormal(bits, e) : bits;
  return (seen & ~SignBit(e)) == 0 && (seen & SignBit(e)) != 0;
}

// Inputs equal to −0 are rewritten to +0 before they are pushed, so that data
// can never be mistaken for the sentinel by the exact test. (+0 and −0 add
// alike, so the sum is unchanged.)
LS_HD LS_INLINE uint32_t SanitizeBits(uint32_t bits, Elem e) {
  return bits == NegZeroBits(e) ? 0u : bits;
}

// One rank's control block for one workspace.
struct LamportState {
  uint32_t buffer = 0;      // buffer the next call writes and polls
  uint32_t arrivals = 0;    // blocks of the current call that have finished
  int64_t clear_elems = 0;  // elements the previous call left in the previous buffer
  uint64_t calls = 0;       // calls completed on this workspace
};

// What one call uses, read from the control block when it starts.
struct LamportCall {
  uint32_t buffer;        // receive buffer of this call (on every rank)
  uint32_t clear_buffer;  // the previous call's buffer, cleared by this call
  int64_t clear_elems;    // how much of it the previous call wrote
  uint64_t epoch;         // 1-based index of this call
};

// `buffers`: the rotation's length, kLamportBuffers (AllReduceArgs::buffers;
// two models the bug of too short a rotation).
LS_HD LS_INLINE LamportCall BeginLamportCall(const LamportState& s,
                                             uint32_t buffers = kLamportBuffers) {
  return LamportCall{s.buffer % buffers, (s.buffer + buffers - 1) % buffers, s.clear_elems,
                     s.calls + 1};
}

// Called once per call, by the last block to arrive: rotates to the next
// buffer and remembers how much this call wrote, for the next call to clear.
LS_HD LS_INLINE void EndLamportCall(LamportState& s, int64_t elems_written,
                                    uint32_t buffers = kLamportBuffers) {
  s.buffer = (s.buffer + 1) % buffers;
  s.clear_elems = elems_written;
  s.arrivals = 0;
  s.calls += 1;
}

// Why a protocol call did not complete.
enum class ProtocolError : uint8_t {
  kNone = 0,
  kWaitExpired = 1,  // a bounded wait ran out of time
  kAborted = 2,      // the host raised the abort word
  kClearFailed = 3,  // the previous call's buffer still held data after it was cleared
};

// The status a protocol call reports: on failure, which peer (index in the
// workspace's peer set) it waited for, in which buffer and at which element.
struct ProtocolStatus {
  ProtocolError error = ProtocolError::kNone;
  int32_t waited_peer = -1;
  uint32_t buffer = 0;
  int64_t offset = 0;

  LS_HD bool ok() const { return error == ProtocolError::kNone; }
};

// Parameters every Lamport all-reduce call takes. All of them must be equal
// on every rank except `rank`: the slot layout depends on `world` and `elems`.
struct AllReduceArgs {
  int32_t rank = 0;   // this rank's index in the workspace's peer set
  int32_t world = 1;  // size of the workspace's peer set
  int64_t elems = 0;  // elements per rank (tokens * hidden)
  Elem elem = Elem::kBf16;
  SentinelTest sentinel = SentinelTest::kExactBits;
  bool ftz = false;
  // Rewrite −0 inputs to +0 before pushing (without it, a −0 input reads as
  // the sentinel and its readers wait forever).
  bool sanitize = true;
  // Read the cleared region back: stale data left by a clear that did not
  // take would otherwise be read as the next call's data, silently.
  bool verify_clear = true;
  // Clear what the previous call wrote (LamportState::clear_elems), not this
  // call's own footprint: after a larger call, a clear sized by a smaller one
  // leaves the larger call's tail, which a later, larger call in that buffer
  // reads as fresh data (TensorRT-LLM #6237).
  bool clear_previous_footprint = true;
  // Sum the peers' slots in rank order 0, 1, ..., so that every rank computes
  // the same bits; from its own slot on, each rank rounds in another order.
  bool rank_order_sum = true;
  // Length of the buffer rotation: kLamportBuffers. With two, the buffer a
  // call clears is the one a peer one call ahead is already writing.
  uint32_t buffers = kLamportBuffers;
  // Custom all-reduce (block_barrier.h): a release fence before each
  // barrier's flags, so that a peer that sees the flag sees what this rank
  // staged before it (without it, a peer may read the staged input before
  // it is visible there: vLLM #8404, #8558).
  bool release_flags = true;
};

// The p-th slot a rank sums (rank_order_sum: slot p; else its own first).
LS_HD LS_INLINE int32_t SumOrderSlot(const AllReduceArgs& a, int32_t p) {
  return a.rank_order_sum ? p : (a.rank + p) % a.world;
}

// Clears what the previous call left in the previous buffer and, with
// `verify_clear`, checks that it reads as the sentinel again. Shared by the
// one-shot and two-shot protocols.
// `footprint`: what this call itself leaves in its buffer (the size a clear
// takes without clear_previous_footprint).
template <class Mem>
LS_HD bool ClearPreviousBuffer(Mem& mem, const LamportCall& call, const AllReduceArgs& a,
                               int64_t footprint) {
  const int64_t n = a.clear_previous_footprint ? call.clear_elems : footprint;
  for (int64_t pos = mem.FirstChunk(0); pos < n; pos = mem.NextChunk(pos, n)) {
    mem.Clear(call.clear_buffer, pos, mem.ChunkLen(pos, n));
  }
  if (!a.verify_clear) return true;
  for (int64_t pos = mem.FirstChunk(0); pos < n; pos = mem.NextChunk(pos, n)) {
    if (!mem.VerifyCleared(call.clear_buffer, pos, mem.ChunkLen(pos, n))) return false;
  }
  return true;
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_LAMPORT_H_
