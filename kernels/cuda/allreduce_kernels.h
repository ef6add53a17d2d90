// Host API of the Lamport all-reduce kernels: one-shot, two-shot, and one-shot
// fused with residual add + RMSNorm, for bf16, fp16 and fp32.

#ifndef LOCKSTEP_KERNELS_CUDA_ALLREDUCE_KERNELS_H_
#define LOCKSTEP_KERNELS_CUDA_ALLREDUCE_KERNELS_H_

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cuda/lamport_launch.h"

namespace lockstep::cuda {

// Threads per block of the plain kernels (16 bytes each per iteration).
inline constexpr int kThreadsPerBlock = 512;

// Launches one call of every virtual rank in `launch` on `stream`. With more
// than one virtual rank the launch is cooperative, so that all ranks' blocks
// are resident together (they wait on each other); `blocks_per_rank` is then
// capped to what fits. The norm variant launches one block per token (at
// most 1024) whatever `blocks_per_rank` says. Returns launch errors only: the call's own outcome is
// in launch.status (see CheckLamportStatus). Preconditions (InvalidArgument):
// elems a multiple of the 16-byte vector, world <= kMaxPeers, the norm variant
// one-shot only with hidden a multiple of the vector.
absl::Status LaunchLamport(LamportLaunch launch, cudaStream_t stream);

// Largest blocks_per_rank a cooperative launch of `virtual_ranks` ranks can
// use on the current device for the given variant.
int MaxCoResidentBlocksPerRank(const LamportLaunch& launch);

// Reads the status words after the stream finished: OK, or the error a rank's
// bounded wait (or clear verification) raised, naming the virtual rank, the
// peer it waited for, the buffer and the element. `peer_names` maps workspace
// indices to global ranks for the message (may be empty).
absl::Status CheckLamportStatus(const LamportLaunch& launch, cudaStream_t stream,
                                const std::vector<int>& peer_names = {});

// Fills `elems` elements of type `elem` at `dst` with the −0 sentinel.
absl::Status FillSentinel(void* dst, int64_t elems, protocol::Elem elem, cudaStream_t stream);

// RMSNorm(x + residual) * gamma as a separate kernel (the unfused baseline:
// NCCL all-reduce then this): writes residual_out = x + residual and
// out = normalised.
absl::Status LaunchResidualRmsNorm(const void* x, const void* residual, const void* gamma,
                                   void* out, void* residual_out, int64_t tokens, int64_t hidden,
                                   protocol::Elem elem, float eps, cudaStream_t stream);

// A plain SM copy of `bytes` (a multiple of 16) from `src` to `dst` with
// 16-byte vectors on `blocks` x 512 threads: with `dst` in a peer's memory,
// the NVLink write bandwidth an all-reduce kernel can hope for (the ceiling
// the benchmarks compare against).
absl::Status LaunchCopy(void* dst, const void* src, int64_t bytes, int blocks, cudaStream_t stream);

// "cudaErrorX (message)" for a status message.
std::string CudaErrorText(cudaError_t err);

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_ALLREDUCE_KERNELS_H_
