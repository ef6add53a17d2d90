// The protocol options a decision's kernel flags ask for (host code: the
// simulator's workspaces and the GPU backend read a DecisionRecord's
// kernel_flags through this one function).

#ifndef LOCKSTEP_KERNELS_PROTOCOL_KERNEL_FLAGS_H_
#define LOCKSTEP_KERNELS_PROTOCOL_KERNEL_FLAGS_H_

#include <stdint.h>

#include "dispatch/decision.h"
#include "kernels/protocol/lamport.h"

namespace lockstep::protocol {

// Sets the options of `a` that KernelFlag bits select. kBoundedWaits is the
// memory policy's (its wait budget), not the protocol's.
inline void ApplyKernelFlags(uint8_t flags, AllReduceArgs& a) {
  a.sentinel =
      (flags & kExactSentinel) != 0 ? SentinelTest::kExactBits : SentinelTest::kZeroAndSignbit;
  a.sanitize = (flags & kSanitizeInputs) != 0;
  a.verify_clear = (flags & kVerifyClear) != 0;
  a.clear_previous_footprint = (flags & kClearPreviousFootprint) != 0;
  a.rank_order_sum = (flags & kRankOrderSum) != 0;
  a.buffers = (flags & kThreeBufferRotation) != 0 ? kLamportBuffers : kLamportBuffers - 1;
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_KERNEL_FLAGS_H_
