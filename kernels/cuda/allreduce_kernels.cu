#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/cuda/custom_device.cuh"
#include "kernels/cuda/lamport_device.cuh"
#include "kernels/protocol/custom_v2.h"
#include "kernels/protocol/one_shot.h"
#include "kernels/protocol/two_shot.h"
#include "kernels/protocol/wait_report.h"

namespace lockstep::cuda {
namespace {

// The norm variant visits whole rows per block (row = block, block + blocks,
// ...; each thread the vectors t, t + blockDim, ... of the row), so that each
// block can normalise the rows it reduced without a grid-wide barrier.
// Vectors per thread chunk: 4 x 16 bytes in flight per thread.
constexpr int kChunkVectors = 4;
// Launch bound of the all-reduce kernel: at most 512 threads, so that the
// compiler may give each thread 128 registers and keep chunks and sums out
// of local memory.
constexpr int kMaxThreads = 512;
static_assert(kThreadsPerBlock <= kMaxThreads);

// The norm variant visits whole rows per block (row = block, block + blocks,
// ...; within a row the same strided chunks as the plain kernel), so that each
// block can normalise the rows it reduced without a grid-wide barrier.
template <Elem E>
class DeviceNormMem : public DeviceLamportMem<E, kChunkVectors> {
  using Base = DeviceLamportMem<E, kChunkVectors>;

 public:
  using typename Base::Value;
  __device__ explicit DeviceNormMem(const DeviceRankView& view) : Base(view, blockDim.x) {}

  __device__ int64_t FirstChunk(int64_t lo) const {
    const int64_t hidden = this->view_.launch->hidden;
    const int64_t col = static_cast<int64_t>(threadIdx.x) * Base::kVec;
    if (col >= hidden) return INT64_MAX / 2;
    return lo + static_cast<int64_t>(this->view_.block) * hidden + col;
  }
  __device__ int64_t NextChunk(int64_t pos, int64_t) const {
    const int64_t hidden = this->view_.launch->hidden;
    int64_t row = pos / hidden;
    int64_t col = pos % hidden + static_cast<int64_t>(blockDim.x) * kChunkVectors * Base::kVec;
    if (col >= hidden) {
      col = static_cast<int64_t>(threadIdx.x) * Base::kVec;
      row += this->view_.blocks;
    }
    return row * hidden + col;
  }
  // Chunks never cross a row.
  __device__ int64_t ChunkLen(int64_t pos, int64_t hi) const {
    const int64_t hidden = this->view_.launch->hidden;
    const int64_t row_end = (pos / hidden + 1) * hidden;
    return Base::ChunkLen(pos, row_end < hi ? row_end : hi);
  }
  // x = allreduce + residual, kept in residual_out for the epilogue.
  __device__ void StoreOutput(int64_t pos, const Value& c) const {
    const uint4* res =
        reinterpret_cast<const uint4*>(this->view_.rank->residual) + pos / Base::kVec;
    uint4* out = reinterpret_cast<uint4*>(this->view_.rank->residual_out) + pos / Base::kVec;
#pragma unroll
    for (int j = 0; j < kChunkVectors; ++j) {
      if (j >= c.n) continue;
      const uint4 r = res[j * this->VecStride()];
      uint4 x;
#pragma unroll
      for (int i = 0; i < Base::kVec; ++i) {
        const float sum = Vec<E>::ToF(Vec<E>::Get(c.v[j], i)) + Vec<E>::ToF(Vec<E>::Get(r, i));
        Vec<E>::Set(x, i, Vec<E>::FromF(sum));
      }
      out[j * this->VecStride()] = x;
    }
  }
  __device__ bool VerifyCleared(uint32_t buffer, int64_t offset, int64_t len) {
    // Keep every thread at the epilogue's barriers: record and go on.
    Base::VerifyCleared(buffer, offset, len);
    return true;
  }
};

__device__ float BlockSum(float v) {
  __shared__ float partial[32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) / 32;
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += partial[w];
  return total;
}

// RMSNorm of one row of `x` (each thread its vectors t, t + blockDim, ...).
template <Elem E>
__device__ void NormRow(const uint4* x, const uint4* gamma, uint4* out, int64_t hidden_vecs,
                        float eps) {
  float sumsq = 0.0f;
  for (int64_t c = threadIdx.x; c < hidden_vecs; c += blockDim.x) {
    const uint4 v = x[c];
#pragma unroll
    for (int i = 0; i < Vec<E>::kElems; ++i) {
      const float f = Vec<E>::ToF(Vec<E>::Get(v, i));
      sumsq += f * f;
    }
  }
  const float total = BlockSum(sumsq);
  const float scale = rsqrtf(total / static_cast<float>(hidden_vecs * Vec<E>::kElems) + eps);
  for (int64_t c = threadIdx.x; c < hidden_vecs; c += blockDim.x) {
    const uint4 v = x[c];
    const uint4 g = gamma[c];
    uint4 o;
#pragma unroll
    for (int i = 0; i < Vec<E>::kElems; ++i) {
      const float f = Vec<E>::ToF(Vec<E>::Get(v, i)) * scale * Vec<E>::ToF(Vec<E>::Get(g, i));
      Vec<E>::Set(o, i, Vec<E>::FromF(f));
    }
    out[c] = o;
  }
}

template <Elem E>
__global__ void __launch_bounds__(kMaxThreads)
    LamportKernel(const __grid_constant__ LamportLaunch p) {
  const int vrank = static_cast<int>(blockIdx.x) / p.blocks_per_rank;
  const DeviceRankView view{&p, &p.ranks[vrank], vrank,
                            static_cast<int>(blockIdx.x) % p.blocks_per_rank, p.blocks_per_rank};
  protocol::AllReduceArgs a = p.options;
  a.rank = p.ranks[vrank].rank;
  a.world = p.world;
  a.elems = p.elems;
  a.elem = E;
  if (p.custom) {
    DeviceCustomMem<E, kChunkVectors> mem(view);
    switch (p.custom_algorithm) {
      case kCustomOneShotPush:
        protocol::OneShotPushAllReduce(mem, a);
        break;
      case kCustomTwoShotPush:
        protocol::TwoShotPushAllReduce(mem, a, Vec<E>::kElems);
        break;
      case kCustomOneShotPull:
      case kCustomTwoShotPull:
        if (p.custom_pull_part == kPullStage) {
          protocol::StagePullInput(mem, a);
        } else if (p.custom_pull_part == kPullReduce) {
          protocol::PullAllReduce(mem, a, p.custom_algorithm == kCustomTwoShotPull, Vec<E>::kElems);
        } else {
          protocol::CopyPullOutput(mem, a);
        }
        break;
      default:
        protocol::CustomAllReduce(mem, a);
        break;
    }
    return;
  }
  if (!p.rms_norm) {
    DeviceLamportMem<E, kChunkVectors> mem(view);
    if (p.two_shot) {
      protocol::TwoShotAllReduce(mem, a);
    } else {
      protocol::OneShotAllReduce(mem, a);
    }
    return;
  }
  DeviceNormMem<E> mem(view);
  protocol::OneShotAllReduce(mem, a);
  __syncthreads();  // the block's residual_out rows are complete
  const int64_t hidden_vecs = p.hidden / Vec<E>::kElems;
  const int64_t tokens = p.elems / p.hidden;
  const LamportRank& r = p.ranks[vrank];
  for (int64_t row = view.block; row < tokens; row += view.blocks) {
    NormRow<E>(reinterpret_cast<const uint4*>(r.residual_out) + row * hidden_vecs,
               reinterpret_cast<const uint4*>(r.gamma),
               reinterpret_cast<uint4*>(r.output) + row * hidden_vecs, hidden_vecs, p.norm_eps);
  }
}

template <Elem E>
__global__ void FillKernel(uint32_t* dst, int64_t words, uint32_t word) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = word;
  }
}

template <Elem E>
__global__ void ResidualNormKernel(const uint4* x, const uint4* residual, const uint4* gamma,
                                   uint4* out, uint4* residual_out, int64_t tokens,
                                   int64_t hidden_vecs, float eps) {
  for (int64_t row = blockIdx.x; row < tokens; row += gridDim.x) {
    for (int64_t c = threadIdx.x; c < hidden_vecs; c += blockDim.x) {
      const uint4 a = x[row * hidden_vecs + c];
      const uint4 b = residual[row * hidden_vecs + c];
      uint4 s;
#pragma unroll
      for (int i = 0; i < Vec<E>::kElems; ++i) {
        Vec<E>::Set(s, i,
                    Vec<E>::FromF(Vec<E>::ToF(Vec<E>::Get(a, i)) + Vec<E>::ToF(Vec<E>::Get(b, i))));
      }
      residual_out[row * hidden_vecs + c] = s;
    }
    __syncthreads();
    NormRow<E>(residual_out + row * hidden_vecs, gamma, out + row * hidden_vecs, hidden_vecs, eps);
    __syncthreads();
  }
}

__global__ void CopyKernel(uint4* dst, const uint4* src, int64_t vectors) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < vectors;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = src[i];
  }
}

// Threads of a norm block: one chunk of a row each (the fused kernel's push
// mapping), so that one pass covers a row; the separate norm kernel uses
// the same count, so both reduce a row's squares in the same order.
int NormThreads(int64_t hidden, int vec) {
  const int64_t chunks = (hidden / vec + kChunkVectors - 1) / kChunkVectors;
  return static_cast<int>(std::clamp<int64_t>((chunks + 31) / 32 * 32, 32, kMaxThreads));
}

template <Elem E>
void* KernelFor() {
  return reinterpret_cast<void*>(&LamportKernel<E>);
}

void* KernelFor(Elem e) {
  switch (e) {
    case Elem::kBf16:
      return KernelFor<Elem::kBf16>();
    case Elem::kFp16:
      return KernelFor<Elem::kFp16>();
    case Elem::kFp32:
      break;
  }
  return KernelFor<Elem::kFp32>();
}

int ThreadsFor(const LamportLaunch& l) {
  return l.rms_norm ? NormThreads(l.hidden, 16 / protocol::ElemBytes(l.elem)) : kThreadsPerBlock;
}

}  // namespace

std::string CudaErrorText(cudaError_t err) {
  return absl::StrFormat("%s (%s)", cudaGetErrorName(err), cudaGetErrorString(err));
}

int MaxCoResidentBlocksPerRank(const LamportLaunch& launch) {
  int device = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, KernelFor(launch.elem), ThreadsFor(launch),
                                                0);
  return std::max(1, sms * per_sm / std::max(1, launch.virtual_ranks));
}

// Launches the kernel for a launch the checks passed: the grid per virtual
// rank (co-resident when several share the GPU), one cooperative launch.
absl::Status LaunchLamportKernel(LamportLaunch launch, cudaStream_t stream) {
  if (launch.virtual_ranks < 1 || launch.virtual_ranks > kMaxVirtualRanks) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d virtual ranks: at most %d", launch.virtual_ranks, kMaxVirtualRanks));
  }
  if (launch.rms_norm) launch.continue_on_failure = true;
  const int threads = ThreadsFor(launch);
  if (launch.rms_norm) {
    // One block per row (token), at most 1024: a row is normalised by the
    // block that reduced it, so rows spread over blocks, not threads.
    launch.blocks_per_rank =
        static_cast<int>(std::min<int64_t>(launch.elems / launch.hidden, 1024));
  }
  if (launch.virtual_ranks > 1) {
    launch.blocks_per_rank = std::min(launch.blocks_per_rank, MaxCoResidentBlocksPerRank(launch));
  }
  launch.blocks_per_rank = std::max(1, launch.blocks_per_rank);
  const dim3 grid(static_cast<unsigned>(launch.blocks_per_rank * launch.virtual_ranks));
  void* args[] = {&launch};
  cudaError_t err;
  if (launch.virtual_ranks > 1) {
    err = cudaLaunchCooperativeKernel(KernelFor(launch.elem), grid, dim3(threads), args, 0, stream);
  } else {
    err = cudaLaunchKernel(KernelFor(launch.elem), grid, dim3(threads), args, 0, stream);
  }
  if (err != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("launching the Lamport all-reduce: %s", CudaErrorText(err)));
  }
  return absl::OkStatus();
}

// A pull call as SGLang launches it (custom_all_reduce.cuh:505-539): the
// staging copy (eager calls), the all-reduce kernel, and 2shot_pull's copy
// out, in stream order, each the same kernel running its part.
absl::Status LaunchCustomPull(const LamportLaunch& launch, cudaStream_t stream) {
  const bool staged = launch.ranks[0].graph_row == nullptr;
  const bool copy_out = launch.custom_algorithm == kCustomTwoShotPull;
  for (const CustomPullPart part : {kPullStage, kPullReduce, kPullCopyOut}) {
    if ((part == kPullStage && !staged) || (part == kPullCopyOut && !copy_out)) continue;
    LamportLaunch l = launch;
    l.custom_pull_part = part;
    if (absl::Status s = LaunchLamportKernel(l, stream); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status LaunchLamport(LamportLaunch launch, cudaStream_t stream) {
  // The shape rules are the dispatch core's (dispatch/kernel_shape.h): the
  // fused backend's predicates refused any call they refuse, on every rank.
  // The custom all-reduce's are the custom backend's (CustomShapeRefusal).
  if (launch.custom) {
    CustomShape shape;
    shape.world = launch.world;
    shape.bytes = launch.elems * protocol::ElemBytes(launch.elem);
    if (const std::string why = CustomShapeRefusal(shape); !why.empty()) {
      return absl::InvalidArgumentError(why);
    }
    if (launch.rms_norm || launch.two_shot) {
      return absl::InvalidArgumentError(
          "the custom all-reduce has no fused two-shot or RMSNorm variant");
    }
    // A push slot holds the whole message (1shot_push) or two halves of
    // one chunk (2shot_push).
    const int64_t elem_bytes = protocol::ElemBytes(launch.elem);
    const int64_t slot_bytes =
        launch.custom_algorithm == kCustomOneShotPush ? launch.elems * elem_bytes
        : launch.custom_algorithm == kCustomTwoShotPush
            ? 2 * protocol::TwoShotPushHalfElems(launch.world, launch.elems, 16 / elem_bytes) *
                  elem_bytes
            : 0;
    if (slot_bytes > launch.custom_push_slot_bytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("a push of %d bytes needs %d-byte slots; the region's hold %d",
                          launch.elems * elem_bytes, slot_bytes, launch.custom_push_slot_bytes));
    }
    launch.blocks_per_rank =
        std::min(launch.blocks_per_rank,
                 launch.custom_algorithm == kCustomStaged ? kCustomFlagBlocks : kCustomV2MaxBlocks);
    if (launch.custom_algorithm == kCustomOneShotPull ||
        launch.custom_algorithm == kCustomTwoShotPull) {
      return LaunchCustomPull(launch, stream);
    }
  } else {
    LamportShape shape;
    shape.world = launch.world;
    shape.elems = launch.elems;
    shape.hidden = launch.hidden;
    shape.elem_bytes = protocol::ElemBytes(launch.elem);
    shape.rms_norm = launch.rms_norm;
    shape.two_shot = launch.two_shot;
    if (const std::string why = LamportShapeRefusal(shape); !why.empty()) {
      return absl::InvalidArgumentError(why);
    }
  }
  return LaunchLamportKernel(launch, stream);
}

absl::Status CheckLamportStatus(const LamportLaunch& launch, cudaStream_t stream,
                                const std::vector<int>& peer_names) {
  LamportStatus status[kMaxVirtualRanks];
  cudaError_t err = cudaMemcpyAsync(
      status, launch.status, sizeof(LamportStatus) * static_cast<size_t>(launch.virtual_ranks),
      cudaMemcpyDeviceToHost, stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  if (err != cudaSuccess) {
    return absl::InternalError(absl::StrFormat(
        "%s all-reduce: %s", launch.custom ? "custom" : "fused", CudaErrorText(err)));
  }
  for (int v = 0; v < launch.virtual_ranks; ++v) {
    const LamportStatus& s = status[v];
    const auto error = static_cast<protocol::ProtocolError>(s.error);
    if (error == protocol::ProtocolError::kNone) continue;
    auto name = [&](int index) {
      return index >= 0 && static_cast<size_t>(index) < peer_names.size() ? peer_names[index]
                                                                          : index;
    };
    if (launch.custom && launch.custom_algorithm != kCustomStaged) {
      const char* algorithm = launch.custom_algorithm == kCustomOneShotPush   ? "1shot_push"
                              : launch.custom_algorithm == kCustomTwoShotPush ? "2shot_push"
                              : launch.custom_algorithm == kCustomOneShotPull ? "1shot_pull"
                                                                              : "2shot_pull";
      return protocol::CustomV2Failure(error, algorithm, name(launch.ranks[v].rank),
                                       s.waited_peer >= 0 ? name(s.waited_peer) : -1, s.buffer,
                                       s.offset, launch.world, s.elapsed_ns);
    }
    if (launch.custom) {
      // The custom kernel records the barrier's phase and the call's epoch.
      return protocol::CustomBarrierFailure(error, name(launch.ranks[v].rank), name(s.waited_peer),
                                            s.buffer, static_cast<uint64_t>(s.offset),
                                            s.elapsed_ns);
    }
    return protocol::LamportFailure(error, name(launch.ranks[v].rank), name(s.waited_peer),
                                    s.buffer, s.offset, s.elapsed_ns);
  }
  return absl::OkStatus();
}

absl::Status FillSentinel(void* dst, int64_t elems, protocol::Elem elem, cudaStream_t stream) {
  const uint32_t z = protocol::NegZeroBits(elem);
  const uint32_t word = elem == Elem::kFp32 ? z : (z | (z << 16));
  const int64_t words = elems * protocol::ElemBytes(elem) / 4;
  FillKernel<Elem::kFp32><<<256, 256, 0, stream>>>(static_cast<uint32_t*>(dst), words, word);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess
             ? absl::OkStatus()
             : absl::InternalError(absl::StrFormat("filling the sentinel: %s", CudaErrorText(err)));
}

absl::Status LaunchCopy(void* dst, const void* src, int64_t bytes, int blocks,
                        cudaStream_t stream) {
  if (bytes <= 0 || bytes % 16 != 0 || blocks < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "copy of %d bytes on %d blocks: bytes must be a positive multiple of 16", bytes, blocks));
  }
  CopyKernel<<<static_cast<unsigned>(blocks), kThreadsPerBlock, 0, stream>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), bytes / 16);
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess
             ? absl::OkStatus()
             : absl::InternalError(absl::StrFormat("copy kernel: %s", CudaErrorText(err)));
}

absl::Status LaunchResidualRmsNorm(const void* x, const void* residual, const void* gamma,
                                   void* out, void* residual_out, int64_t tokens, int64_t hidden,
                                   protocol::Elem elem, float eps, cudaStream_t stream) {
  const int vec = 16 / protocol::ElemBytes(elem);
  const int threads = NormThreads(hidden, vec);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(tokens, 1024));
  const auto* a = static_cast<const uint4*>(x);
  const auto* b = static_cast<const uint4*>(residual);
  const auto* g = static_cast<const uint4*>(gamma);
  auto* o = static_cast<uint4*>(out);
  auto* r = static_cast<uint4*>(residual_out);
  switch (elem) {
    case Elem::kBf16:
      ResidualNormKernel<Elem::kBf16>
          <<<blocks, threads, 0, stream>>>(a, b, g, o, r, tokens, hidden / vec, eps);
      break;
    case Elem::kFp16:
      ResidualNormKernel<Elem::kFp16>
          <<<blocks, threads, 0, stream>>>(a, b, g, o, r, tokens, hidden / vec, eps);
      break;
    case Elem::kFp32:
      ResidualNormKernel<Elem::kFp32>
          <<<blocks, threads, 0, stream>>>(a, b, g, o, r, tokens, hidden / vec, eps);
      break;
  }
  const cudaError_t err = cudaGetLastError();
  return err == cudaSuccess
             ? absl::OkStatus()
             : absl::InternalError(absl::StrFormat("RMSNorm kernel: %s", CudaErrorText(err)));
}

}  // namespace lockstep::cuda
