// The device memory policy of the Lamport protocols (kernels/protocol/):
// one chunk is one thread's 16-byte vector; pushes are system-scope volatile
// stores into peers' buffers (mapped peer memory); polls are volatile loads
// bounded by %globaltimer and a host-mapped abort word. The protocol logic
// itself is the shared code in kernels/protocol/.

#ifndef LOCKSTEP_KERNELS_CUDA_LAMPORT_DEVICE_CUH_
#define LOCKSTEP_KERNELS_CUDA_LAMPORT_DEVICE_CUH_

#include <stdint.h>

#include "kernels/cuda/lamport_launch.h"
#include "kernels/protocol/lamport.h"

namespace lockstep::cuda {

using protocol::Elem;
using protocol::LamportState;
using protocol::ProtocolError;
using protocol::ProtocolStatus;

__device__ __forceinline__ uint4 LoadVolatile(const uint4* p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ void StoreVolatile(uint4* p, const uint4& v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1,%2,%3,%4};" ::"l"(p), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}

__device__ __forceinline__ uint64_t GlobalTimerNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Element-wise view of a 16-byte vector of E.
template <Elem E>
struct Vec {
  static constexpr int kElems = 16 / protocol::ElemBytes(E);
  static __device__ __forceinline__ uint32_t Get(const uint4& v, int i) {
    const uint32_t* w = reinterpret_cast<const uint32_t*>(&v);
    if constexpr (E == Elem::kFp32) {
      return w[i];
    } else {
      return (w[i / 2] >> (16 * (i % 2))) & 0xffffu;
    }
  }
  static __device__ __forceinline__ void Set(uint4& v, int i, uint32_t bits) {
    uint32_t* w = reinterpret_cast<uint32_t*>(&v);
    if constexpr (E == Elem::kFp32) {
      w[i] = bits;
    } else {
      const int shift = 16 * (i % 2);
      w[i / 2] = (w[i / 2] & ~(0xffffu << shift)) | (bits << shift);
    }
  }
  static __device__ __forceinline__ float ToF(uint32_t bits) {
    if constexpr (E == Elem::kBf16) {
      return __uint_as_float(bits << 16);
    } else if constexpr (E == Elem::kFp16) {
      return __half2float(__ushort_as_half(static_cast<unsigned short>(bits)));
    } else {
      return __uint_as_float(bits);
    }
  }
  static __device__ __forceinline__ uint32_t FromF(float f) {
    if constexpr (E == Elem::kBf16) {
      return __bfloat16_as_ushort(__float2bfloat16_rn(f));
    } else if constexpr (E == Elem::kFp16) {
      return __half_as_ushort(__float2half_rn(f));
    } else {
      return __float_as_uint(f);
    }
  }
};

// Per-launch state shared by every thread of one virtual rank's blocks.
struct DeviceRankView {
  const LamportLaunch* launch;
  const LamportRank* rank;
  int vrank;   // virtual rank (index in launch->ranks)
  int block;   // this block's index among the rank's blocks
  int blocks;  // blocks per rank
};

// One thread's chunk: up to U 16-byte vectors a fixed stride apart (vector j
// at element pos + j * stride; the plain kernels use the grid's width, the
// norm kernel a block's width within a row), so that every access
// instruction of a warp touches 512 contiguous bytes, every block has work
// as soon as the message spans one vector per thread, and a thread has U
// memory operations in flight before it uses any. `n` is how many vectors
// the chunk holds (a range's last chunks may be short).
template <int U>
struct VecChunk {
  uint4 v[U];
  int n;
};

template <Elem E, int U>
class DeviceLamportMem {
 public:
  using Value = VecChunk<U>;
  static constexpr int kVec = Vec<E>::kElems;  // elements per vector
  struct Acc {
    float v[U * kVec];
    int n;
  };

  // `stride_vecs`: vectors between a chunk's vectors (0: the grid's width).
  __device__ explicit DeviceLamportMem(const DeviceRankView& view, int64_t stride_vecs = 0)
      : view_(view),
        stride_vecs_(stride_vecs != 0 ? stride_vecs
                                      : static_cast<int64_t>(view.blocks) * blockDim.x) {}

  // Thread t of block b starts at vector b * blockDim + t of the range; a
  // chunk spans U grid-widths.
  __device__ int64_t FirstChunk(int64_t lo) const {
    return lo + (static_cast<int64_t>(view_.block) * blockDim.x + threadIdx.x) * kVec;
  }
  __device__ int64_t NextChunk(int64_t pos, int64_t) const { return pos + stride_vecs_ * U * kVec; }
  // Elements of the chunk at pos below hi.
  __device__ int64_t ChunkLen(int64_t pos, int64_t hi) const {
    const int64_t stride = Stride();
    const int64_t n = (hi - pos + stride - 1) / stride;
    return (n < U ? n : U) * kVec;
  }

  __device__ Value LoadInput(int64_t pos, int64_t len) const {
    Value c;
    c.n = static_cast<int>(len / kVec);
    const uint4* in = reinterpret_cast<const uint4*>(view_.rank->input) + pos / kVec;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < c.n) c.v[j] = in[j * VecStride()];
    }
    return c;
  }
  __device__ void Sanitize(Value& c) const {
#pragma unroll
    for (int j = 0; j < U; ++j) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        Vec<E>::Set(c.v[j], i, protocol::SanitizeBits(Vec<E>::Get(c.v[j], i), E));
      }
    }
  }
  __device__ void Push(int32_t peer, uint32_t buffer, int64_t offset, const Value& c) const {
    uint4* dst = reinterpret_cast<uint4*>(view_.rank->peer_buffers[peer]) +
                 (buffer * view_.launch->buffer_elems + offset) / kVec;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < c.n) StoreVolatile(dst + j * VecStride(), c.v[j]);
    }
  }
  // Polls the chunk at `offset` until no element of it holds the sentinel.
  // The fast path (the peer's pushes already landed, or land within a few
  // microseconds) reads nothing but the chunk and, every 128 polls,
  // %globaltimer; the failure checks (another thread's recorded error, the
  // host-mapped abort word, one PCIe round trip each) start only once the
  // wait has lasted kSlowWaitNs. A budget of 0 disables the timer and the
  // checks: an unbounded wait, for measuring what bounding costs only.
  static constexpr uint64_t kSlowWaitNs = 20'000;
  __device__ __forceinline__ bool Wait(uint32_t buffer, int64_t offset, int64_t len, int32_t writer,
                                       Value* out) {
    const uint4* p = reinterpret_cast<const uint4*>(view_.rank->my_buffers) +
                     (buffer * view_.launch->buffer_elems + offset) / kVec;
    out->n = static_cast<int>(len / kVec);
    if (Poll(p, out)) return true;
    const uint64_t budget = view_.launch->wait_budget_ns;
    const uint64_t start = budget != 0 ? GlobalTimerNs() : 0;
    for (uint32_t spin = 1;; ++spin) {
      if (Poll(p, out)) return true;
      if (budget != 0 && (spin & 127u) == 0) {
        const uint64_t waited = GlobalTimerNs() - start;
        if (waited > budget) return GiveUp(true, writer, buffer, offset, out);
        if (waited > kSlowWaitNs && Failed()) return GiveUp(false, writer, buffer, offset, out);
      }
    }
  }
  __device__ void Clear(uint32_t buffer, int64_t offset, int64_t len) const {
    uint4 neg;
    const uint32_t z = protocol::NegZeroBits(E);
    const uint32_t word = E == Elem::kFp32 ? z : (z | (z << 16));
    neg.x = neg.y = neg.z = neg.w = word;
    uint4* dst = reinterpret_cast<uint4*>(view_.rank->my_buffers) +
                 (buffer * view_.launch->buffer_elems + offset) / kVec;
    const int n = static_cast<int>(len / kVec);
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < n) StoreVolatile(dst + j * VecStride(), neg);
    }
  }
  __device__ bool VerifyCleared(uint32_t buffer, int64_t offset, int64_t len) {
    const uint4* src = reinterpret_cast<const uint4*>(view_.rank->my_buffers) +
                       (buffer * view_.launch->buffer_elems + offset) / kVec;
    const int n = static_cast<int>(len / kVec);
    uint4 v[U];
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < n) v[j] = LoadVolatile(src + j * VecStride());
    }
    bool clear = true;
#pragma unroll
    for (int j = 0; j < U; ++j) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        if (j < n) clear &= Vec<E>::Get(v[j], i) == protocol::NegZeroBits(E);
      }
    }
    if (!clear) Record(ProtocolError::kClearFailed, -1, buffer, offset);
    return clear;
  }
  __device__ Acc Zero() const {
    Acc a;
#pragma unroll
    for (int i = 0; i < U * kVec; ++i) a.v[i] = 0.0f;
    a.n = 0;
    first_ = true;
    return a;
  }
  // In rank order. Without fp32 accumulation every partial sum is rounded to
  // E, as a native E addition would (the fused path's numerics).
  __device__ void Add(Acc& acc, const Value& c) {
    const bool fp32 = view_.launch->fp32_acc;
#pragma unroll
    for (int j = 0; j < U; ++j) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) {
        const float x = Vec<E>::ToF(Vec<E>::Get(c.v[j], i));
        const float s = first_ ? x : acc.v[j * kVec + i] + x;
        acc.v[j * kVec + i] = fp32 ? s : Vec<E>::ToF(Vec<E>::FromF(s));
      }
    }
    acc.n = c.n;
    first_ = false;
  }
  __device__ Value Finish(const Acc& acc) const {
    Value c;
    c.n = acc.n;
#pragma unroll
    for (int j = 0; j < U; ++j) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) Vec<E>::Set(c.v[j], i, Vec<E>::FromF(acc.v[j * kVec + i]));
    }
    return c;
  }
  __device__ void StoreOutput(int64_t pos, const Value& c) const {
    uint4* out = reinterpret_cast<uint4*>(view_.rank->output) + pos / kVec;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < c.n) out[j * VecStride()] = c.v[j];
    }
  }
  __device__ LamportState& State() const { return *view_.rank->state; }
  // One thread of the grid (thread 0 of the last block of this rank to
  // finish) returns true.
  __device__ bool ArriveLast() const {
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      const uint32_t before = atomicAdd(&view_.rank->state->arrivals, 1u);
      last = before + 1 == static_cast<uint32_t>(view_.blocks);
    }
    __syncthreads();
    return last != 0 && threadIdx.x == 0;
  }
  __device__ ProtocolStatus Failure() const {
    ProtocolStatus s;
    s.error = ProtocolError::kAborted;
    return s;
  }

 protected:
  // Distance between a chunk's vectors, in elements and in vectors.
  __device__ int64_t Stride() const { return stride_vecs_ * kVec; }
  __device__ int64_t VecStride() const { return stride_vecs_; }
  __device__ bool HasSentinel(const uint4& v) const {
    const protocol::SentinelTest test = view_.launch->options.sentinel;
    if (test == protocol::SentinelTest::kExactBits) {
      if constexpr (E == Elem::kFp32) {
        return v.x == 0x80000000u || v.y == 0x80000000u || v.z == 0x80000000u || v.w == 0x80000000u;
      } else {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
        bool any = false;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          any |= (w[i] & 0xffffu) == 0x8000u || (w[i] >> 16) == 0x8000u;
        }
        return any;
      }
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      if (protocol::IsSentinel(Vec<E>::Get(v, i), E, test, view_.launch->options.ftz)) return true;
    }
    return false;
  }
  // Loads the chunk's vectors (all before testing any) into *out; true when
  // none holds the sentinel.
  __device__ __forceinline__ bool Poll(const uint4* p, Value* out) const {
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < out->n) out->v[j] = LoadVolatile(p + j * VecStride());
    }
    bool ready = true;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < out->n) ready &= !HasSentinel(out->v[j]);
    }
    return ready;
  }
  // Another thread, block or the host gave up: stop waiting at once.
  __device__ bool Failed() const {
    return *reinterpret_cast<volatile int*>(&view_.launch->status[view_.vrank].error) != 0 ||
           (view_.launch->abort != nullptr && *view_.launch->abort != 0);
  }
  __device__ void Record(ProtocolError error, int32_t writer, uint32_t buffer,
                         int64_t offset) const {
    LamportStatus* s = &view_.launch->status[view_.vrank];
    if (atomicCAS(&s->error, 0, static_cast<int>(error)) == 0) {
      s->waited_peer = writer;
      s->buffer = buffer;
      s->offset = offset;
      s->elapsed_ns = view_.launch->wait_budget_ns;
      __threadfence();
    }
  }
  // Ends a wait that cannot complete: records why (the budget expired, or
  // the host raised the abort word; a failure another thread recorded
  // first is kept). The norm epilogue needs every thread at its barriers, so
  // an abandoned wait yields zeros there; plain all-reduces stop at once.
  __device__ __forceinline__ bool GiveUp(bool expired, int32_t writer, uint32_t buffer,
                                         int64_t offset, Value* out) const {
    if (expired) {
      Record(ProtocolError::kWaitExpired, writer, buffer, offset);
    } else if (view_.launch->abort != nullptr && *view_.launch->abort != 0) {
      Record(ProtocolError::kAborted, writer, buffer, offset);
    }
#pragma unroll
    for (int j = 0; j < U; ++j) out->v[j] = make_uint4(0, 0, 0, 0);
    return view_.launch->continue_on_failure;
  }

  DeviceRankView view_;
  int64_t stride_vecs_;
  mutable bool first_ = true;
};

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_LAMPORT_DEVICE_CUH_
