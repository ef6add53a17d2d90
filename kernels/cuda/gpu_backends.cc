#include "kernels/cuda/gpu_backends.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/protocol/kernel_flags.h"
#include "kernels/protocol/wait_report.h"

namespace lockstep::cuda {
namespace {

// The dtype name of a kernel element type, for messages.
std::string_view ElemName(protocol::Elem e) {
  for (DType d : {DType::kBf16, DType::kFp16, DType::kFp32}) {
    if (absl::StatusOr<protocol::Elem> x = ElemOf(d); x.ok() && *x == e) return DTypeName(d);
  }
  return DTypeName(DType::kUnset);
}

// Runs `launch` on `device`'s `stream`, waits, and returns the kernel's
// status as an error (the fused and the custom backends alike).
absl::Status LaunchAndWait(int device, const LamportLaunch& launch, cudaStream_t stream) {
  if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess) {
    return absl::InternalError(absl::StrFormat("cudaSetDevice(%d): %s", device, CudaErrorText(e)));
  }
  if (absl::Status s = LaunchLamport(launch, stream); !s.ok()) return s;
  return CheckLamportStatus(launch, stream);
}

}  // namespace

absl::StatusOr<protocol::Elem> ElemOf(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return protocol::Elem::kBf16;
    case DType::kFp16:
      return protocol::Elem::kFp16;
    case DType::kFp32:
      return protocol::Elem::kFp32;
    case DType::kUnset:
      break;
  }
  return absl::InvalidArgumentError("the tensor has no element type (DType::kUnset)");
}

GpuFusedBackend::GpuFusedBackend(LamportWorkspace* workspace, cudaStream_t stream)
    : workspace_(workspace), stream_(stream) {}

absl::StatusOr<LamportLaunch> GpuFusedBackend::MakeLaunch(const Tensor& tensor,
                                                          const DecisionRecord& record) const {
  if (workspace_ == nullptr) {
    return absl::FailedPreconditionError(
        "the fused backend has no workspace buffers (its rendezvous never created them)");
  }
  absl::StatusOr<protocol::Elem> elem = ElemOf(tensor.desc.dtype);
  if (!elem.ok()) return elem.status();
  const WorkspaceSpec& spec = workspace_->spec();
  // The dispatch core checked capacity against the agreed Workspace; this
  // re-checks against the allocation itself, so that a runtime whose agreed
  // state and buffers disagree fails loudly instead of writing past them.
  if (*elem != spec.elem || tensor.desc.hidden() > spec.hidden ||
      tensor.desc.numel() > spec.max_tokens * spec.hidden) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor [%d x %d] %s does not fit the workspace (max %d tokens x %d hidden %s)",
        tensor.desc.tokens(), tensor.desc.hidden(), ElemName(*elem), spec.max_tokens, spec.hidden,
        ElemName(spec.elem)));
  }
  LamportLaunch l;
  l.world = workspace_->world();
  l.elems = tensor.desc.numel();
  l.hidden = tensor.desc.hidden();
  l.buffer_elems = workspace_->buffer_elems();
  l.elem = *elem;
  protocol::ApplyKernelFlags(record.kernel_flags, l.options);
  l.fp32_acc = record.fp32_acc;
  l.two_shot = record.algorithm == Algorithm::kTwoShot;
  // Without kBoundedWaits the kernel polls without a bound (0).
  l.wait_budget_ns = (record.kernel_flags & kBoundedWaits) != 0 ? wait_budget_ns_ : 0;
  l.abort = workspace_->abort_device();
  l.status = workspace_->status();
  l.virtual_ranks = 1;
  l.blocks_per_rank = record.blocks > 0 ? record.blocks : 1;
  LamportRank& r = l.ranks[0];
  r = workspace_->RankParams();
  r.input = tensor.data;
  r.output = tensor.data;
  if (record.norm_fused) {
    if (norm_.residual == nullptr || norm_.residual_out == nullptr || norm_.gamma == nullptr) {
      return absl::FailedPreconditionError(
          "a kAllReduceResidualRmsNorm call needs set_norm_operands() first");
    }
    l.rms_norm = true;
    l.two_shot = false;  // the fused norm kernel is one-shot (see LaunchLamport)
    l.norm_eps = norm_.eps;
    r.residual = norm_.residual;
    r.residual_out = norm_.residual_out;
    r.gamma = norm_.gamma;
  }
  return l;
}

absl::Status GpuFusedBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (before_call_) {
    if (absl::Status s = before_call_(record); !s.ok()) return s;
  }
  absl::StatusOr<LamportLaunch> launch = MakeLaunch(tensor, record);
  if (!launch.ok()) return launch.status();
  return LaunchAndWait(workspace_->device(), *launch, stream_);
}

GpuCustomBackend::GpuCustomBackend(LamportWorkspace* region, cudaStream_t stream)
    : region_(region), stream_(stream) {}

absl::StatusOr<LamportLaunch> GpuCustomBackend::MakeLaunch(const TensorDesc& desc,
                                                           const void* input, void* output,
                                                           const DecisionRecord& record,
                                                           const void* const* graph_row) const {
  if (region_ == nullptr || !region_->custom()) {
    return absl::FailedPreconditionError(
        "the custom backend has no custom all-reduce region (its set-up never created one)");
  }
  absl::StatusOr<protocol::Elem> elem = ElemOf(desc.dtype);
  if (!elem.ok()) return elem.status();
  const WorkspaceSpec& spec = region_->spec();
  const int64_t bytes = desc.bytes();
  // The dispatch core checked the size bound against the agreed state; this
  // re-checks against the allocation: the staging buffer for the staged
  // algorithms (LaunchLamport checks a push against the push slots).
  const bool pushed =
      record.algorithm == Algorithm::kOneShotPush || record.algorithm == Algorithm::kTwoShotPush;
  if (!pushed && bytes > spec.custom_bytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d bytes of %s do not fit the custom all-reduce region (%d bytes)", bytes,
                        ElemName(*elem), spec.custom_bytes));
  }
  if (graph_row != nullptr && input == output) {
    return absl::InvalidArgumentError(
        "a call on registered graph inputs needs an output apart from its input: peers read "
        "the input during the call");
  }
  LamportLaunch l;
  l.custom = true;
  l.custom_flags_offset = region_->custom_flags_offset();
  l.custom_push_slot_bytes = spec.custom_push_bytes;
  switch (record.algorithm) {
    case Algorithm::kOneShotPush:
      l.custom_algorithm = kCustomOneShotPush;
      break;
    case Algorithm::kTwoShotPush:
      l.custom_algorithm = kCustomTwoShotPush;
      break;
    case Algorithm::kOneShotPull:
      l.custom_algorithm = kCustomOneShotPull;
      break;
    case Algorithm::kTwoShotPull:
      l.custom_algorithm = kCustomTwoShotPull;
      break;
    case Algorithm::kNone:
      l.custom_algorithm = kCustomStaged;
      break;
    default:
      return absl::InvalidArgumentError(absl::StrFormat("the custom all-reduce has no %s algorithm",
                                                        AlgorithmName(record.algorithm)));
  }
  l.world = region_->world();
  l.elems = desc.numel();
  l.hidden = desc.hidden();
  l.buffer_elems = region_->buffer_elems();
  l.elem = *elem;
  l.options.release_flags = (record.kernel_flags & kReleaseFlags) != 0;
  l.fp32_acc = true;
  l.wait_budget_ns = wait_budget_ns_;
  l.abort = region_->abort_device();
  l.status = region_->status();
  l.virtual_ranks = 1;
  l.blocks_per_rank = record.blocks > 0 ? record.blocks : 1;
  LamportRank& r = l.ranks[0];
  r = region_->RankParams();
  r.input = input;
  r.output = output;
  r.graph_row = graph_row;
  return l;
}

absl::Status GpuCustomBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (before_call_) {
    if (absl::Status s = before_call_(record); !s.ok()) return s;
  }
  absl::StatusOr<LamportLaunch> launch = MakeLaunch(tensor.desc, tensor.data, tensor.data, record);
  if (!launch.ok()) return launch.status();
  return LaunchAndWait(region_->device(), *launch, stream_);
}

absl::Status GpuNcclBackend::AllReduce(Tensor& tensor, const DecisionRecord& record) {
  if (before_call_) {
    if (absl::Status s = before_call_(record); !s.ok()) return s;
  }
  if (aborted_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "NCCL communicator of %s was aborted by the watchdog at an earlier call", name_));
  }
  ncclDataType_t type;
  switch (tensor.desc.dtype) {
    case DType::kBf16:
      type = ncclBfloat16;
      break;
    case DType::kFp16:
      type = ncclFloat16;
      break;
    case DType::kFp32:
      type = ncclFloat32;
      break;
    case DType::kUnset:
    default:
      return absl::InvalidArgumentError("the tensor has no element type (DType::kUnset)");
  }
  const ncclResult_t r =
      ncclAllReduce(tensor.data, tensor.data, static_cast<size_t>(tensor.desc.numel()), type,
                    ncclSum, comm_, stream_);
  if (r != ncclSuccess && r != ncclInProgress) {
    return absl::InternalError(absl::StrFormat("ncclAllReduce on %s: %s (%s)", name_,
                                               ncclGetErrorString(r), ncclGetLastError(comm_)));
  }
  return Wait(record);
}

absl::Status GpuNcclBackend::Wait(const DecisionRecord& record) {
  return WaitFor("all-reduce", record.seq);
}

absl::Status GpuNcclBackend::WaitFor(const std::string& what, std::optional<uint64_t> seq) {
  if (watchdog_ns_ == 0) {
    if (cudaError_t e = cudaStreamSynchronize(stream_); e != cudaSuccess) {
      return absl::InternalError(
          absl::StrFormat("NCCL %s on %s: %s", what, name_, CudaErrorText(e)));
    }
    return absl::OkStatus();
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    // A non-blocking communicator may still be enqueuing (ncclInProgress):
    // only once that is done does the stream hold the whole call.
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      return absl::InternalError(
          absl::StrFormat("NCCL %s on %s: %s", what, name_, ncclGetErrorString(async)));
    }
    if (async == ncclSuccess) {
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return absl::OkStatus();
      if (q != cudaErrorNotReady) {
        return absl::InternalError(
            absl::StrFormat("NCCL %s on %s: %s", what, name_, CudaErrorText(q)));
      }
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    if (static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()) > watchdog_ns_) {
      ncclCommAbort(comm_);
      aborted_ = true;
      return protocol::WatchdogExpired(what, name_, seq, watchdog_ns_);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

namespace {

absl::StatusOr<ncclDataType_t> NcclType(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return ncclBfloat16;
    case DType::kFp16:
      return ncclFloat16;
    case DType::kFp32:
      return ncclFloat32;
    case DType::kUnset:
      break;
  }
  return absl::InvalidArgumentError("the tensor has no element type (DType::kUnset)");
}

bool NcclFailed(ncclResult_t r) { return r != ncclSuccess && r != ncclInProgress; }

// Unequal per-member counts: one grouped call per member, `call(m, offset)`
// with `offset` the member's first element; the first error, or success.
template <typename Call>
ncclResult_t PerMemberGroup(std::span<const int64_t> counts, Call call) {
  ncclResult_t r = ncclSuccess;
  ncclGroupStart();
  int64_t offset = 0;
  for (size_t m = 0; m < counts.size(); ++m) {
    if (ncclResult_t rr = call(static_cast<int>(m), offset); NcclFailed(rr) && !NcclFailed(r)) {
      r = rr;
    }
    offset += counts[m];
  }
  if (ncclResult_t rr = ncclGroupEnd(); NcclFailed(rr) && !NcclFailed(r)) r = rr;
  return r;
}

bool EqualCounts(std::span<const int64_t> counts) {
  return std::all_of(counts.begin(), counts.end(), [&](int64_t c) { return c == counts.front(); });
}

}  // namespace

absl::Status GpuNcclBackend::ReduceScatter(const void* in, void* out,
                                           std::span<const int64_t> counts, int member,
                                           DType dtype) {
  absl::StatusOr<ncclDataType_t> type = NcclType(dtype);
  if (!type.ok()) return type.status();
  const int64_t esize = DTypeSize(dtype);
  const ncclResult_t r =
      EqualCounts(counts) ? ncclReduceScatter(in, out, static_cast<size_t>(counts.front()), *type,
                                              ncclSum, comm_, stream_)
                          : PerMemberGroup(counts, [&](int m, int64_t offset) {
                              return ncclReduce(static_cast<const char*>(in) + offset * esize,
                                                m == member ? out : nullptr,
                                                static_cast<size_t>(counts[static_cast<size_t>(m)]),
                                                *type, ncclSum, m, comm_, stream_);
                            });
  if (NcclFailed(r)) {
    return absl::InternalError(
        absl::StrFormat("ncclReduceScatter on %s: %s", name_, ncclGetErrorString(r)));
  }
  return WaitFor("reduce-scatter", std::nullopt);
}

absl::Status GpuNcclBackend::AllGather(const void* in, void* out, std::span<const int64_t> counts,
                                       int member, DType dtype) {
  absl::StatusOr<ncclDataType_t> type = NcclType(dtype);
  if (!type.ok()) return type.status();
  const int64_t esize = DTypeSize(dtype);
  const ncclResult_t r =
      EqualCounts(counts)
          ? ncclAllGather(in, out, static_cast<size_t>(counts.front()), *type, comm_, stream_)
          : PerMemberGroup(counts, [&](int m, int64_t offset) {
              auto* recv = static_cast<char*>(out) + offset * esize;
              return ncclBroadcast(m == member ? in : recv, recv,
                                   static_cast<size_t>(counts[static_cast<size_t>(m)]), *type, m,
                                   comm_, stream_);
            });
  if (NcclFailed(r)) {
    return absl::InternalError(
        absl::StrFormat("ncclAllGather on %s: %s", name_, ncclGetErrorString(r)));
  }
  return WaitFor("all-gather", std::nullopt);
}

}  // namespace lockstep::cuda
