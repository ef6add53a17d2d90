// What the host hands the Lamport all-reduce kernels: plain data, shared by
// the launcher (host) and the kernels (device).

#ifndef LOCKSTEP_KERNELS_CUDA_LAMPORT_LAUNCH_H_
#define LOCKSTEP_KERNELS_CUDA_LAMPORT_LAUNCH_H_

#include <stdint.h>

#include "dispatch/kernel_shape.h"
#include "kernels/protocol/lamport.h"

namespace lockstep::cuda {

inline constexpr int kMaxPeers = kKernelMaxPeers;  // ranks of one workspace
// Ranks one launch may run on one GPU (tests on single-GPU hosts): the
// GB200 scenarios' 16- and 32-rank groups.
inline constexpr int kMaxVirtualRanks = 32;
// Thread blocks of one custom all-reduce call: its barrier has one flag per
// (block, peer) in every rank's region (CustomFlagOffset), so a grid is
// capped to this many blocks.
inline constexpr int kCustomFlagBlocks = 64;

// Why a rank's call failed; written by the kernel in device memory.
struct LamportStatus {
  int error = 0;             // protocol::ProtocolError
  int32_t waited_peer = -1;  // workspace index of the peer waited for
  uint32_t buffer = 0;
  int64_t offset = 0;  // element in that buffer
  uint64_t elapsed_ns = 0;
};

// One rank's part of a launch.
struct LamportRank {
  int32_t rank = 0;             // index in the workspace's peer set
  const void* input = nullptr;  // [elems] of the element type
  void* output = nullptr;       // [elems]
  void* my_buffers = nullptr;   // this rank's 3 receive buffers
  // Every peer's receive buffers, mapped here: a table of `world` entries in
  // device memory (the workspace's), so that the launch stays small at 72.
  void* const* peer_buffers = nullptr;
  protocol::LamportState* state = nullptr;  // this rank's control block (device memory)
  // Fused residual add + RMSNorm (kARResidualRMSNorm); null for kAllReduce.
  const void* residual = nullptr;  // [tokens, hidden]
  void* residual_out = nullptr;    // [tokens, hidden]: allreduce + residual
  const void* gamma = nullptr;     // [hidden]
  // Custom all-reduce replayed from a CUDA graph on registered inputs: one
  // row of `world` pointers in device memory, peer p's captured input at
  // [p] (filled when the inputs are registered, after capture); null: the
  // call stages its input through my_buffers.
  const void* const* graph_row = nullptr;
};

struct LamportLaunch {
  int32_t world = 1;
  int64_t elems = 0;         // per rank
  int64_t hidden = 0;        // row length (norm epilogue)
  int64_t buffer_elems = 0;  // elements per receive buffer
  protocol::Elem elem = protocol::Elem::kBf16;
  // The protocol's options (sentinel test, flush-to-zero, sanitising, the
  // clear and its read-back, summation order, rotation: ApplyKernelFlags);
  // rank, world, elems and elem are the launch's own, set per rank.
  protocol::AllReduceArgs options;
  bool fp32_acc = false;
  bool two_shot = false;
  bool rms_norm = false;
  // The custom all-reduce (kernels/protocol/block_barrier.h) instead of a
  // Lamport protocol: my_buffers / peer_buffers are the ranks' staging
  // regions, each with its barrier flags at byte `custom_flags_offset`;
  // LamportState::calls counts its calls (the barrier epochs).
  bool custom = false;
  int64_t custom_flags_offset = 0;
  // SGLang 0.5.23's v2 algorithms (kernels/protocol/custom_v2.h), on the
  // same regions: kCustomStaged runs v1's staged protocol above. The push
  // slots, arrival words and counters sit at the CustomRegion offsets.
  uint8_t custom_algorithm = 0;  // CustomKernelAlgorithm
  int64_t custom_push_slot_bytes = 0;
  // 1shot_pull and 2shot_pull: which part of the call this launch runs (the
  // staging copy and 2shot_pull's copy out are launches of their own, as in
  // SGLang).
  uint8_t custom_pull_part = 0;  // CustomPullPart
  float norm_eps = 1e-6f;
  bool continue_on_failure = false;  // set for the norm epilogue (block barriers)
  // Budget of every bounded wait; 0 waits without bound (and without the
  // timer and abort checks): only to measure what bounding costs.
  uint64_t wait_budget_ns = 10ull * 1000 * 1000 * 1000;
  const volatile int* abort = nullptr;  // host-mapped; nonzero: give up
  LamportStatus* status = nullptr;      // device memory, one per virtual rank
  int32_t virtual_ranks = 1;            // ranks launched in this kernel (one GPU)
  int32_t blocks_per_rank = 1;
  LamportRank ranks[kMaxVirtualRanks];
};

// Bytes of a custom all-reduce region's barrier flags: one 64-bit epoch per
// (phase, block, writer).
inline constexpr int64_t kCustomFlagBytes = 2 * int64_t{kCustomFlagBlocks} * kMaxPeers * 8;
// Where rank `writer`'s flag of `phase` for block `block` sits among a
// region's flags (in 64-bit words).
constexpr int64_t CustomFlagIndex(uint32_t phase, int32_t block, int32_t writer) {
  return (static_cast<int64_t>(phase) * kCustomFlagBlocks + block) * kMaxPeers + writer;
}

// The custom kernel's algorithms (LamportLaunch::custom_algorithm).
enum CustomKernelAlgorithm : uint8_t {
  kCustomStaged = 0,  // v1: block_barrier.h
  kCustomOneShotPush = 1,
  kCustomOneShotPull = 2,
  kCustomTwoShotPull = 3,
  kCustomTwoShotPush = 4,
};
// The parts of a pull call, launched in stream order.
enum CustomPullPart : uint8_t { kPullStage = 0, kPullReduce = 1, kPullCopyOut = 2 };

// Thread blocks a v2 launch may have: one push counter, one pull counter and
// one arrival word per block in every region.
inline constexpr int kCustomV2MaxBlocks = 1024;

// Where the parts of a custom region of `world` ranks sit, in bytes from its
// start: the staging buffer (v1) / pull workspace (v2) at 0, v1's flags, the
// push plane (2 halves x world slots, as SGLang's PushPlane), the arrival
// words peers add to, and the counters only the owner touches (push, then
// pull).
struct CustomRegion {
  int64_t flags = 0;
  int64_t push = 0;
  int64_t arrivals = 0;
  int64_t counters = 0;
  int64_t bytes = 0;
};
constexpr int64_t RoundUp128(int64_t n) { return (n + 127) / 128 * 128; }
constexpr CustomRegion CustomRegionLayout(int64_t staging_bytes, int64_t push_slot_bytes,
                                          int32_t world) {
  CustomRegion r;
  r.flags = RoundUp128(staging_bytes);
  r.push = r.flags + RoundUp128(kCustomFlagBytes);
  r.arrivals = r.push + RoundUp128(2 * int64_t{world} * push_slot_bytes);
  r.counters = r.arrivals + int64_t{kCustomV2MaxBlocks} * 4;
  r.bytes = r.counters + 2 * int64_t{kCustomV2MaxBlocks} * 4;
  return r;
}
// Where writer `src`'s slot of `half` sits in a region's push plane
// (PushEpoch::slot_ptr: `src * slot_bytes + (epoch & 1) * slot_bytes * world`).
constexpr int64_t CustomPushSlotOffset(uint32_t half, int32_t src, int64_t slot_bytes,
                                       int32_t world) {
  return (static_cast<int64_t>(half & 1u) * world + src) * slot_bytes;
}

// The launch is passed by value: keep it within the classic 4 KiB of kernel
// parameters.
static_assert(sizeof(LamportLaunch) <= 4096, "the launch outgrew the kernel parameter space");

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_LAMPORT_LAUNCH_H_
