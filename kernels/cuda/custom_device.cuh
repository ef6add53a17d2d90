// The device memory policy of the custom all-reduce
// (kernels/protocol/block_barrier.h): the chunk iteration, loads, sums and
// bounded-wait bookkeeping of the Lamport policy (lamport_device.cuh), plus a
// staging buffer every peer has mapped and one barrier flag per (phase,
// block, writer) in every rank's region. Thread p of a block signals peer p
// and waits for peer p's flag, as the reference kernels do (sgl-kernel
// custom_all_reduce.cuh, barrier_at_start: `if (threadIdx.x < ngpus)`); the
// block's threads meet in EndBarrier. The protocol logic is the shared code.
// For v2 (kernels/protocol/custom_v2.h) it adds the push plane (slots polled
// until no 32-bit word is +0), the pull plane's counting barrier (arrival
// words peers add to, per-block counters) and the stores of 2shot_pull's
// shards into peers' workspaces; see docs/KERNELS.md.

#ifndef LOCKSTEP_KERNELS_CUDA_CUSTOM_DEVICE_CUH_
#define LOCKSTEP_KERNELS_CUDA_CUSTOM_DEVICE_CUH_

#include "kernels/cuda/lamport_device.cuh"
#include "kernels/protocol/block_barrier.h"
#include "kernels/protocol/custom_v2.h"

namespace lockstep::cuda {

__device__ __forceinline__ uint64_t LoadAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void StoreRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint32_t LoadAcquireSys32(const uint32_t* p) {
  uint32_t v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
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

  // ---- v2 push plane (kernels/protocol/custom_v2.h) ----

  // The block's counter parity. Every thread reads it before thread 0 flips
  // it at the end (FlipHalf meets the block first).
  __device__ uint32_t PushHalf() const { return PushCounter() & 1u; }
  // +0 32-bit words become -0 in the element's sign bit (LamportTrait with
  // kAtom = 4: a bf16/fp16 word's low element, an fp32 word itself).
  __device__ void ClearMarkers(Value& c) const {
    constexpr uint32_t kNeg = Base::kVec == 4 ? 0x80000000u : 0x00008000u;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      uint32_t* w = reinterpret_cast<uint32_t*>(&c.v[j]);
#pragma unroll
      for (int i = 0; i < 4; ++i) w[i] = w[i] == 0 ? kNeg : w[i];
    }
  }
  __device__ void PushSlot(int32_t peer, uint32_t half, int64_t pos, const Value& c) const {
    const LamportRank& r = *this->view_.rank;
    uint4* dst = reinterpret_cast<uint4*>(
                     static_cast<char*>(r.peer_buffers[peer]) + Region().push +
                     CustomPushSlotOffset(half, r.rank, SlotBytes(), this->view_.launch->world)) +
                 pos / Base::kVec;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < c.n) StoreVolatile(dst + j * this->VecStride(), c.v[j]);
    }
  }
  // Polls writer's slot until no 32-bit word holds +0, bounded like the
  // Lamport polls; the failure names the writer (buffer: the half).
  __device__ bool PollSlot(int32_t writer, uint32_t half, int64_t pos, int64_t len,
                           Value* out) const {
    const uint4* p = SlotIn(writer, half) + pos / Base::kVec;
    out->n = static_cast<int>(len / Base::kVec);
    if (PollWords(p, out)) return true;
    const uint64_t budget = this->view_.launch->wait_budget_ns;
    const uint64_t start = budget != 0 ? GlobalTimerNs() : 0;
    for (uint32_t spin = 1;; ++spin) {
      if (PollWords(p, out)) return true;
      if (budget != 0 && (spin & 127u) == 0) {
        const uint64_t waited = GlobalTimerNs() - start;
        const bool expired = waited > budget;
        if (expired || (waited > Base::kSlowWaitNs && this->Failed())) {
          const bool aborted = this->view_.launch->abort != nullptr && *this->view_.launch->abort;
          if (expired || aborted) {
            this->Record(expired ? ProtocolError::kWaitExpired : ProtocolError::kAborted, writer,
                         half, pos);
          }
          return false;
        }
      }
    }
  }
  __device__ void ResetSlot(int32_t writer, uint32_t half, int64_t pos, int64_t len) const {
    uint4* p = const_cast<uint4*>(SlotIn(writer, half)) + pos / Base::kVec;
    const int n = static_cast<int>(len / Base::kVec);
    const uint4 zero = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < n) StoreVolatile(p + j * this->VecStride(), zero);
    }
  }
  __device__ void FlipHalf(uint32_t half) const {
    __syncthreads();
    if (threadIdx.x == 0) Counters()[this->view_.block] = half ^ 1u;
  }

  // ---- v2 pull plane ----

  // counter += arrivals on this block's pull counter; every thread gets the
  // old value (the window), which only the waiting thread uses.
  __device__ uint32_t ReserveWindow(uint32_t arrivals) const {
    __shared__ uint32_t window;
    __syncthreads();
    if (threadIdx.x == 0) {
      uint32_t* c = Counters() + kCustomV2MaxBlocks + this->view_.block;
      window = *c;
      *c = window + arrivals;
    }
    __syncthreads();
    return window;
  }
  // 2shot_pull: the shard's sum into peer's workspace (its registered input
  // when captured), read there after the second phase.
  __device__ void StoreStaged(int32_t peer, int64_t pos, const Value& c) const {
    const LamportRank& r = *this->view_.rank;
    void* base =
        r.graph_row != nullptr ? const_cast<void*>(r.graph_row[peer]) : r.peer_buffers[peer];
    uint4* dst = reinterpret_cast<uint4*>(base) + pos / Base::kVec;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < c.n) StoreVolatile(dst + j * this->VecStride(), c.v[j]);
    }
  }
  // Thread `peer` adds 1 to peer's arrival word of this block (red.add at
  // system scope; the phase's release, when asked, came before).
  __device__ void Arrive(int32_t peer, uint32_t) const {
    if (static_cast<int32_t>(threadIdx.x) != peer) return;
    auto* words = reinterpret_cast<uint32_t*>(
        static_cast<char*>(this->view_.rank->peer_buffers[peer]) + Region().arrivals);
    asm volatile("red.relaxed.sys.global.add.u32 [%0], 1;" ::"l"(words + this->view_.block)
                 : "memory");
  }
  // Thread `rank` waits until its arrival word moved world past `target`
  // (an acquire load, as arrive_rel_acq; unsigned, as Barrier::arrive).
  // The count names no writer: a failure names none (waited_peer -1).
  __device__ bool WaitArrivals(uint32_t phase, uint32_t target) const {
    const LamportRank& r = *this->view_.rank;
    if (static_cast<int32_t>(threadIdx.x) != r.rank) return true;
    const auto* word = reinterpret_cast<const uint32_t*>(static_cast<const char*>(r.my_buffers) +
                                                         Region().arrivals) +
                       this->view_.block;
    const auto world = static_cast<uint32_t>(this->view_.launch->world);
    if (LoadAcquireSys32(word) - target >= world) return true;
    const uint64_t budget = this->view_.launch->wait_budget_ns;
    const uint64_t start = budget != 0 ? GlobalTimerNs() : 0;
    for (uint32_t spin = 1;; ++spin) {
      if (LoadAcquireSys32(word) - target >= world) return true;
      if (budget != 0 && (spin & 127u) == 0) {
        const uint64_t waited = GlobalTimerNs() - start;
        const bool expired = waited > budget;
        if (expired || (waited > Base::kSlowWaitNs && this->Failed())) {
          const bool aborted = this->view_.launch->abort != nullptr && *this->view_.launch->abort;
          if (expired || aborted) {
            // buffer: the phase; offset: the arrivals seen past the target.
            this->Record(expired ? ProtocolError::kWaitExpired : ProtocolError::kAborted, -1, phase,
                         static_cast<int64_t>(LoadAcquireSys32(word) - target));
          }
          return false;
        }
      }
    }
  }
  __device__ void SyncBlock() const { __syncthreads(); }
  // PullCall's fence after the staging copy: the GPU runs the copy as a
  // launch of its own (CustomPullPart), so nothing is left to fence here.
  __device__ void EndKernel() const {}
  // The rank's call counter: read by every block at the start, advanced by
  // the last block to finish (the next launch on the stream starts after).
  __device__ uint64_t NextEpoch() const { return this->State().calls + 1; }
  __device__ void EndCall(uint64_t epoch) const {
    if (this->ArriveLast()) {
      this->State().calls = epoch;
      this->State().arrivals = 0;
    }
  }

 private:
  __device__ CustomRegion Region() const {
    // The launch carries the flags' offset (the staging buffer's end): the
    // layout after it is fixed.
    CustomRegion r = CustomRegionLayout(0, SlotBytes(), this->view_.launch->world);
    const int64_t shift = this->view_.launch->custom_flags_offset - r.flags;
    r.flags += shift;
    r.push += shift;
    r.arrivals += shift;
    r.counters += shift;
    return r;
  }
  __device__ int64_t SlotBytes() const { return this->view_.launch->custom_push_slot_bytes; }
  __device__ uint32_t* Counters() const {
    return reinterpret_cast<uint32_t*>(static_cast<char*>(this->view_.rank->my_buffers) +
                                       Region().counters);
  }
  __device__ uint32_t PushCounter() const {
    return *reinterpret_cast<volatile uint32_t*>(Counters() + this->view_.block);
  }
  __device__ const uint4* SlotIn(int32_t writer, uint32_t half) const {
    return reinterpret_cast<const uint4*>(
        static_cast<const char*>(this->view_.rank->my_buffers) + Region().push +
        CustomPushSlotOffset(half, writer, SlotBytes(), this->view_.launch->world));
  }
  // Loads the chunk's vectors (all before testing any); true when no 32-bit
  // word of them is +0 (LamportTrait::has_pos_zero).
  __device__ __forceinline__ bool PollWords(const uint4* p, Value* out) const {
#pragma unroll
    for (int j = 0; j < U; ++j) {
      if (j < out->n) out->v[j] = LoadVolatile(p + j * this->VecStride());
    }
    bool ready = true;
#pragma unroll
    for (int j = 0; j < U; ++j) {
      const uint4& v = out->v[j];
      if (j < out->n) ready &= v.x != 0 && v.y != 0 && v.z != 0 && v.w != 0;
    }
    return ready;
  }
};

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_CUSTOM_DEVICE_CUH_
