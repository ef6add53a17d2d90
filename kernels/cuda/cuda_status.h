// CUDA runtime and NCCL results as absl::Status, naming the call that failed:
// the one status macro of the tree (kernels, workspaces, backends, the
// hardware runner and the benchmarks all use it).
//
//   absl::Status CopyIn(void* dst, const void* src, size_t n) {
//     LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
//     return absl::OkStatus();
//   }

#ifndef LOCKSTEP_KERNELS_CUDA_CUDA_STATUS_H_
#define LOCKSTEP_KERNELS_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace lockstep::cuda {

// InternalError "<what>: cudaErrorX (message)", or OK for cudaSuccess.
inline absl::Status CudaStatus(cudaError_t err, std::string_view what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(
      absl::StrFormat("%s: %s (%s)", what, cudaGetErrorName(err), cudaGetErrorString(err)));
}

}  // namespace lockstep::cuda

// Returns a non-OK absl::Status from the enclosing function (which returns
// absl::Status or absl::StatusOr<T>).
#define LOCKSTEP_RETURN_IF_ERROR(status_expr)                                    \
  do {                                                                           \
    if (absl::Status lockstep_status_ = (status_expr); !lockstep_status_.ok()) { \
      return lockstep_status_;                                                   \
    }                                                                            \
  } while (0)

// Returns the error of a CUDA runtime call, naming the call.
#define LOCKSTEP_RETURN_IF_CUDA_ERROR(expr) \
  LOCKSTEP_RETURN_IF_ERROR(::lockstep::cuda::CudaStatus((expr), #expr))

#endif  // LOCKSTEP_KERNELS_CUDA_CUDA_STATUS_H_
