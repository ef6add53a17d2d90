// NCCL results as absl::Status, naming the call that failed (the NCCL half of
// kernels/cuda/cuda_status.h, for the code that links NCCL).

#ifndef LOCKSTEP_KERNELS_CUDA_NCCL_STATUS_H_
#define LOCKSTEP_KERNELS_CUDA_NCCL_STATUS_H_

#include <nccl.h>

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/cuda/cuda_status.h"

namespace lockstep::cuda {

// OK for ncclSuccess and, with `in_progress_ok`, for ncclInProgress (a
// non-blocking communicator still working); else InternalError
// "<what>: <NCCL's message>".
inline absl::Status NcclStatus(ncclResult_t result, std::string_view what,
                               bool in_progress_ok = false) {
  if (result == ncclSuccess || (in_progress_ok && result == ncclInProgress)) {
    return absl::OkStatus();
  }
  return absl::InternalError(absl::StrFormat("%s: %s", what, ncclGetErrorString(result)));
}

}  // namespace lockstep::cuda

// Returns the error of a NCCL call, naming the call.
#define LOCKSTEP_RETURN_IF_NCCL_ERROR(expr) \
  LOCKSTEP_RETURN_IF_ERROR(::lockstep::cuda::NcclStatus((expr), #expr))

#endif  // LOCKSTEP_KERNELS_CUDA_NCCL_STATUS_H_
