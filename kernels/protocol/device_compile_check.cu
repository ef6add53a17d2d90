// Instantiates every protocol of kernels/protocol/ as device code, over a
// minimal device memory policy, so that nvcc proves on every build (CI
// included, for sm_90 and sm_100) that the code the simulator runs is also
// valid CUDA. The production kernels (kernels/cuda/) instantiate the same
// templates with their real memory policy.

#include <stdint.h>

#include "kernels/protocol/block_barrier.h"
#include "kernels/protocol/one_shot.h"
#include "kernels/protocol/two_shot.h"

namespace lockstep::protocol {
namespace {

// One 32-bit element per thread per chunk; peers' buffers through a pointer
// table; polls re-read volatile memory.
struct CheckMem {
  using Value = uint32_t;
  struct Acc {
    float sum;
  };

  const uint32_t* input;
  uint32_t* output;
  uint32_t** peer_buffers;  // [peer] -> base of that peer's three buffers
  uint32_t* my_buffers;
  int64_t buffer_elems;
  LamportState* state;
  Elem elem;
  SentinelTest sentinel;
  // Custom all-reduce.
  uint32_t** peer_staged;
  uint64_t** peer_flags;
  uint64_t* my_flags;
  uint64_t epoch;

  __device__ int64_t FirstChunk(int64_t lo) const {
    return lo + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  }
  __device__ int64_t NextChunk(int64_t pos, int64_t) const {
    return pos + static_cast<int64_t>(gridDim.x) * blockDim.x;
  }
  __device__ int64_t ChunkLen(int64_t, int64_t) const { return 1; }
  __device__ Value LoadInput(int64_t pos, int64_t) { return input[pos]; }
  __device__ void Sanitize(Value& v) { v = SanitizeBits(v, elem); }
  __device__ void Push(int32_t peer, uint32_t buffer, int64_t offset, const Value& v) {
    peer_buffers[peer][buffer * buffer_elems + offset] = v;
  }
  __device__ bool Wait(uint32_t buffer, int64_t offset, int64_t, int32_t, Value* out) {
    volatile uint32_t* p = my_buffers + buffer * buffer_elems + offset;
    uint32_t v = *p;
    while (IsSentinel(v, elem, sentinel, false)) v = *p;
    *out = v;
    return true;
  }
  __device__ void Clear(uint32_t buffer, int64_t offset, int64_t) {
    my_buffers[buffer * buffer_elems + offset] = NegZeroBits(elem);
  }
  __device__ bool VerifyCleared(uint32_t buffer, int64_t offset, int64_t) {
    return my_buffers[buffer * buffer_elems + offset] == NegZeroBits(elem);
  }
  __device__ Acc Zero() const { return Acc{0.0f}; }
  __device__ void Add(Acc& acc, const Value& v) { acc.sum += ToFloat(v, elem); }
  __device__ Value Finish(const Acc& acc) { return FromFloat(acc.sum, elem); }
  __device__ void StoreOutput(int64_t pos, const Value& v) { output[pos] = v; }
  __device__ LamportState& State() { return *state; }
  __device__ bool ArriveLast() { return atomicAdd(&state->arrivals, 1u) + 1 == gridDim.x; }
  __device__ ProtocolStatus Failure() const { return ProtocolStatus{}; }
  // Custom all-reduce.
  __device__ void Stage(int64_t pos, const Value& v) { peer_staged[0][pos] = v; }
  __device__ bool LoadStaged(int32_t peer, int64_t pos, int64_t, Value* out) {
    *out = peer_staged[peer][pos];
    return true;
  }
  // The release the barrier declares: this thread's earlier stores (its
  // staged input) are visible system-wide before its later ones (the flags).
  __device__ void Release() { __threadfence_system(); }
  __device__ void Signal(int32_t peer, uint32_t phase, uint64_t e) {
    volatile uint64_t* f = &peer_flags[peer][phase * gridDim.x + blockIdx.x];
    *f = e;
  }
  // An acquire load: the staged loads after it cannot be satisfied before it.
  __device__ bool WaitFlags(int32_t peer, uint32_t phase, uint64_t e) {
    const uint64_t* f = my_flags + (phase * gridDim.x + blockIdx.x) * 8 + peer;
    uint64_t v = 0;
    do {
      asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(f) : "memory");
    } while (v != e);
    return true;
  }
  __device__ uint64_t NextEpoch() { return ++epoch; }
  __device__ bool EndBarrier(bool ok) { return __syncthreads_and(ok) != 0; }
  __device__ void EndCall(uint64_t) {}
};

__global__ void OneShotCheck(CheckMem mem, AllReduceArgs args) { OneShotAllReduce(mem, args); }
__global__ void TwoShotCheck(CheckMem mem, AllReduceArgs args) { TwoShotAllReduce(mem, args); }
__global__ void CustomCheck(CheckMem mem, AllReduceArgs args) { CustomAllReduce(mem, args); }

}  // namespace

// Referenced so that the kernels are emitted.
void* ProtocolDeviceCheckKernels[] = {reinterpret_cast<void*>(&OneShotCheck),
                                      reinterpret_cast<void*>(&TwoShotCheck),
                                      reinterpret_cast<void*>(&CustomCheck)};

}  // namespace lockstep::protocol
