// The GPU runtime behind the dispatch seam (dispatch/backend.h): the fused
// backend runs lockstep's Lamport kernels on a LamportWorkspace, the NCCL
// backend calls ncclAllReduce. The dispatch core decides (the reference
// predicates of FusedAllReduceBackend are final); these only execute.

#ifndef LOCKSTEP_KERNELS_CUDA_GPU_BACKENDS_H_
#define LOCKSTEP_KERNELS_CUDA_GPU_BACKENDS_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dispatch/backend.h"
#include "dispatch/dtype.h"
#include "kernels/cuda/lamport_launch.h"
#include "kernels/cuda/workspace.h"

namespace lockstep::cuda {

// Called before a backend runs a call, with the decision that chose it: an
// error returned here is the call's error and nothing runs (the hardware
// runner injects kernel errors and counts calls through it).
using BeforeCallHook = std::function<absl::Status(const DecisionRecord&)>;

// DType → kernel element type; InvalidArgument for kUnset.
absl::StatusOr<protocol::Elem> ElemOf(DType dtype);

// Operands of the fused residual add + RMSNorm (FusionPattern
// kAllReduceResidualRmsNorm): the tensor handed to AllReduce is the
// all-reduce input and receives the normalised output.
struct NormOperands {
  const void* residual = nullptr;  // [tokens, hidden]
  void* residual_out = nullptr;    // [tokens, hidden]: all-reduce + residual
  const void* gamma = nullptr;     // [hidden]
  float eps = 1e-6f;
};

class GpuFusedBackend final : public FusedAllReduceBackend {
 public:
  // `workspace` and `stream` (on the workspace's device) outlive the backend.
  GpuFusedBackend(LamportWorkspace* workspace, cudaStream_t stream);

  // The all-reduce path a caller takes: launches the kernel the decision
  // configured (algorithm, grid, accumulation, kernel flags) on the tensor
  // in place, waits for the stream and turns the kernel's status into an
  // error (DeadlineExceeded naming the peer that never arrived, Aborted,
  // DataLoss for a clear that did not take). A failed call leaves the
  // workspace unusable until it is re-created: fail-stop.
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;

  // Operands of the next kAllReduceResidualRmsNorm calls (call before them).
  void set_norm_operands(const NormOperands& norm) { norm_ = norm; }
  // Budget of every bounded wait (default 10 s).
  void set_wait_budget_ns(uint64_t ns) { wait_budget_ns_ = ns; }
  void set_before_call(BeforeCallHook hook) { before_call_ = std::move(hook); }

  // The launch AllReduce would make, for callers that enqueue without
  // waiting (CUDA-graph capture, benchmarks). InvalidArgument when the
  // tensor does not fit the workspace.
  absl::StatusOr<LamportLaunch> MakeLaunch(const Tensor& tensor,
                                           const DecisionRecord& record) const;

 private:
  LamportWorkspace* workspace_;
  cudaStream_t stream_;
  NormOperands norm_;
  uint64_t wait_budget_ns_ = 10ull * 1000 * 1000 * 1000;
  BeforeCallHook before_call_;
};

// The custom all-reduce on GPUs: kernels/protocol/block_barrier.h run by
// the kernels of allreduce_kernels.cu on a custom region (a LamportWorkspace
// made with WorkspaceSpec::custom_bytes): each rank stages its input in its
// region, meets its peers at a flag barrier, sums every peer's staged input
// in rank order with fp32 accumulation (SGLang 0.5.23's reduce_vec), and
// meets them again. CanUse stays the dispatch core's
// (CustomAllReduceBackend); this only executes.
class GpuCustomBackend final : public CustomAllReduceBackend {
 public:
  // `region` and `stream` (on the region's device) outlive the backend.
  GpuCustomBackend(LamportWorkspace* region, cudaStream_t stream);

  // Reduces `tensor` in place through the staging buffer, waits for the
  // stream and turns the kernel's status into an error: DeadlineExceeded
  // naming the barrier and the peer whose flag never came, Aborted for the
  // host's abort word. Every barrier wait is bounded (the reference's are
  // not): a failed call leaves the region unusable (fail-stop).
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;

  // The launch of one call from `input` into `output` (distinct from it on
  // registered graph inputs: peers read the input during the call), for
  // callers that enqueue without waiting (CUDA-graph capture, benchmarks).
  // `graph_row`: the registration row the call reads peers' inputs through
  // (LamportWorkspace::graph_row), null to stage. InvalidArgument when the
  // message does not fit the region.
  absl::StatusOr<LamportLaunch> MakeLaunch(const TensorDesc& desc, const void* input, void* output,
                                           const DecisionRecord& record,
                                           const void* const* graph_row = nullptr) const;

  void set_wait_budget_ns(uint64_t ns) { wait_budget_ns_ = ns; }
  void set_before_call(BeforeCallHook hook) { before_call_ = std::move(hook); }

 private:
  LamportWorkspace* region_;
  cudaStream_t stream_;
  uint64_t wait_budget_ns_ = 10ull * 1000 * 1000 * 1000;
  BeforeCallHook before_call_;
};

class GpuNcclBackend final : public NcclBackend {
 public:
  // `comm` and `stream` outlive the backend.
  GpuNcclBackend(ncclComm_t comm, cudaStream_t stream) : comm_(comm), stream_(stream) {}

  // ncclAllReduce (sum) in place, then waits for it. With a watchdog set
  // (the communicator must be non-blocking), the wait polls the stream and
  // ncclCommGetAsyncError; past the deadline it aborts the communicator
  // (ncclCommAbort) and returns DeadlineExceeded naming the group and call,
  // so a peer that never joins ends the call instead of hanging it. The
  // communicator is unusable afterwards: fail-stop.
  absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) override;

  void set_watchdog_ns(uint64_t ns) { watchdog_ns_ = ns; }
  // Whether the watchdog aborted (and so freed) the communicator: its owner
  // must neither destroy nor abort it again.
  bool aborted() const { return aborted_; }

  // Collectives outside the all-reduce chain (attention DP's gather and
  // return), under the same watchdog, with `counts[m]` elements for member m:
  // a reduce-scatter(v) (member `member` receives its share of the sum of
  // every member's `in`, into `out`), or an all-gather(v) (`out` receives
  // every member's `in`, concatenated). Equal counts use ncclReduceScatter /
  // ncclAllGather; unequal ones a group of ncclReduce / ncclBroadcast calls,
  // as SGLang's pynccl does.
  absl::Status ReduceScatter(const void* in, void* out, std::span<const int64_t> counts, int member,
                             DType dtype);
  absl::Status AllGather(const void* in, void* out, std::span<const int64_t> counts, int member,
                         DType dtype);
  void set_before_call(BeforeCallHook hook) { before_call_ = std::move(hook); }
  // The group's name in messages ("attn_tp [0,1]").
  void set_name(std::string name) { name_ = std::move(name); }

 private:
  absl::Status Wait(const DecisionRecord& record);
  // Waits for the stream's last call, named `what` in a timeout's message.
  absl::Status WaitFor(const std::string& what, std::optional<uint64_t> seq);

  ncclComm_t comm_;
  cudaStream_t stream_;
  uint64_t watchdog_ns_ = 0;
  BeforeCallHook before_call_;
  std::string name_ = "group";
  bool aborted_ = false;
};

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_GPU_BACKENDS_H_
