// What lockstep's Lamport kernels (kernels/cuda/allreduce_kernels.cu) can
// run, in one place: the fused backend's predicates refuse a call the
// kernels would refuse (so every rank falls back together, before anyone
// launches), and the launcher checks the same function before it launches.
//
//   if (std::string_view why = LamportShapeRefusal(shape); !why.empty()) ...
//   // "hidden 4100 of 2-byte elements is not a whole number of 16-byte vectors"

#ifndef LOCKSTEP_DISPATCH_KERNEL_SHAPE_H_
#define LOCKSTEP_DISPATCH_KERNEL_SHAPE_H_

#include <cstdint>
#include <string>

namespace lockstep {

// The kernels move 16-byte vectors: a row (and so every message) must be a
// whole number of them.
inline constexpr int kKernelVectorBytes = 16;
// Ranks of one workspace the kernels serve: one NVL72 domain, as FlashInfer's
// MNNVL kernels (the peer table lives in device memory, one entry per rank).
// A wider group's workspace fails at set-up on every member (the simulator's
// HardwareModel::FusedKernelReachable, the hardware runner's
// hw::FusedKernelReachable), so the vote turns the fused path off on all of
// them together.
inline constexpr int kKernelMaxPeers = 72;

// Whether the kernels serve a workspace of `world` ranks.
constexpr bool KernelServesWorld(int64_t world) { return world >= 1 && world <= kKernelMaxPeers; }

struct LamportShape {
  int world = 1;
  int64_t elems = 0;   // per rank
  int64_t hidden = 0;  // row length
  int64_t elem_bytes = 2;
  bool rms_norm = false;  // the fused residual + RMSNorm epilogue (one-shot only)
  bool two_shot = false;
};

// Whether a row of `hidden` elements of `elem_bytes` is whole 16-byte vectors.
constexpr bool RowIsWholeVectors(int64_t hidden, int64_t elem_bytes) {
  return hidden > 0 && elem_bytes > 0 && (hidden * elem_bytes) % kKernelVectorBytes == 0;
}

// Why the kernels refuse `shape`, or an empty string when they run it.
std::string LamportShapeRefusal(const LamportShape& shape);

// Ranks one custom all-reduce serves: SGLang 0.5.23's v2 kernels are
// instantiated up to 16 (kMaxWorldSize, sgl_kernel/distributed/
// communicator.cuh:26); lockstep's kernel signals and waits with one thread
// per peer.
inline constexpr int kCustomKernelMaxPeers = 16;

struct CustomShape {
  int world = 1;
  int64_t bytes = 0;  // per rank
};

// Why the custom all-reduce kernel refuses `shape`, or "" when it runs it.
// The custom backend's predicates (CustomPredicatesHold) admit a subset: a
// world size the generation serves, bytes % 16 == 0, within the size bound
// (which the staging buffer is allocated to).
std::string CustomShapeRefusal(const CustomShape& shape);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_KERNEL_SHAPE_H_
