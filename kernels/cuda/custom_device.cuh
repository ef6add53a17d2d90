// The device memory policy of the custom all-reduce
// (kernels/protocol/block_barrier.h): the chunk iteration, loads, sums and
// bounded-wait bookkeeping of the Lamport policy (lamport_device.cuh), plus a
// staging buffer every peer has mapped and one barrier flag per (phase,
// block, writer) in every rank's region. Thread p of a block signals peer p
// and waits for peer p's flag, as the reference kernels do (sgl-kernel
// custom_all_reduce.cuh, barrier_at_start: `if (threadIdx.x < ngpus)`); the
// block's threads meet in EndBarrier. The protocol logic is the shared code.

#ifndef LOCKSTEP_KERNELS_CUDA_CUSTOM_DEVICE_CUH_
#define LOCKSTEP_KERNELS_CUDA_CUSTOM_DEVICE_CUH_

#include "kernels/cuda/lamport_device.cuh"
#include "kernels/protocol/block_barrier.h"

namespace lockstep::cuda {

__device__ __forceinline__ uint64_t LoadAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void StoreRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

template <Elem E, int U>
class DeviceCustomMem : public DeviceLamportMem<E, U> {
  using Base = DeviceLamportMem<E, U>;

 public:
  using typename Base::Value;
  __device__ explicit DeviceCustomMem(const DeviceRankView& view) : Base(view) {}

  // Into this rank's staging buffer; on registered graph inputs the input
  // already is where peers read it.
  __device__ void Stage(int64_t pos, const Value& c) const {
    if (this->view_.rank->graph_row != nullptr) return;
    uint4* dst = reinterpret_cast<uint4*>(this->view_.rank->my_buffers) + pos / Base::kVec;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < c.n) dst[j * this->VecStride()] = c.v[j];
    }
  }
  // Peer `peer`'s staged chunk (or registered graph input), read through
  // the mapping after the start barrier's acquire.
  __device__ bool LoadStaged(int32_t peer, int64_t pos, int64_t len, Value* out) const {
    const LamportRank& r = *this->view_.rank;
    const void* base = r.graph_row != nullptr ? r.graph_row[peer] : r.peer_buffers[peer];
    const uint4* src = reinterpret_cast<const uint4*>(base) + pos / Base::kVec;
    out->n = static_cast<int>(len / Base::kVec);
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < out->n) out->v[j] = LoadVolatile(src + j * this->VecStride());
    }
    return true;
  }
  // Every thread's staged stores are visible system-wide before any flag
  // this block stores after it.
  __device__ void Release() const {
    __syncthreads();
    __threadfence_system();
  }
  __device__ void Signal(int32_t peer, uint32_t phase, uint64_t epoch) const {
    if (static_cast<int32_t>(threadIdx.x) != peer) return;
    const LamportRank& r = *this->view_.rank;
    auto* flags = reinterpret_cast<uint64_t*>(static_cast<char*>(r.peer_buffers[peer]) +
                                              this->view_.launch->custom_flags_offset);
    StoreRelaxedSys(flags + CustomFlagIndex(phase, this->view_.block, r.rank), epoch);
  }
  // Thread `peer` polls peer's flag of this block (an acquire load), bounded
  // by the launch's budget and the abort word like the Lamport polls.
  __device__ bool WaitFlags(int32_t peer, uint32_t phase, uint64_t epoch) const {
    if (static_cast<int32_t>(threadIdx.x) != peer) return true;
    const auto* flags =
        reinterpret_cast<const uint64_t*>(static_cast<const char*>(this->view_.rank->my_buffers) +
                                          this->view_.launch->custom_flags_offset);
    const uint64_t* f = flags + CustomFlagIndex(phase, this->view_.block, peer);
    if (LoadAcquireSys(f) == epoch) return true;
    const uint64_t budget = this->view_.launch->wait_budget_ns;
    const uint64_t start = budget != 0 ? GlobalTimerNs() : 0;
    for (uint32_t spin = 1;; ++spin) {
      if (LoadAcquireSys(f) == epoch) return true;
      if (budget != 0 && (spin & 127u) == 0) {
        const uint64_t waited = GlobalTimerNs() - start;
        const bool expired = waited > budget;
        if (expired || (waited > Base::kSlowWaitNs && this->Failed())) {
          const bool aborted = this->view_.launch->abort != nullptr && *this->view_.launch->abort;
          if (expired || aborted) {
            // buffer: the barrier's phase; offset: the call's epoch.
            this->Record(expired ? ProtocolError::kWaitExpired : ProtocolError::kAborted, peer,
                         phase, static_cast<int64_t>(epoch));
          }
          return false;
        }
      }
    }
  }
  __device__ bool EndBarrier(bool ok) const { return __syncthreads_and(ok ? 1 : 0) != 0; }
  // The rank's call counter: read by every block at the start, advanced by
  // the last block to finish (the next launch on the stream starts after).
  __device__ uint64_t NextEpoch() const { return this->State().calls + 1; }
  __device__ void EndCall(uint64_t epoch) const {
    if (this->ArriveLast()) {
      this->State().calls = epoch;
      this->State().arrivals = 0;
    }
  }
};

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_CUSTOM_DEVICE_CUH_
