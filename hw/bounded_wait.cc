#include "hw/bounded_wait.h"

#include <thread>

#include "absl/strings/str_format.h"
#include "kernels/protocol/wait_report.h"

namespace lockstep::hw {

absl::Status WaitMpiRequest(MPI_Request* request, Clock::time_point deadline,
                            std::string_view what) {
  for (;;) {
    int done = 0;
    if (MPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      return absl::InternalError(absl::StrFormat("%s: MPI error", what));
    }
    if (done) return absl::OkStatus();
    if (Clock::now() > deadline) {
      MPI_Cancel(request);
      return protocol::PeerMissedDeadline(what);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

absl::Status WaitNcclReady(ncclComm_t comm, Clock::time_point deadline, std::string_view what) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = ncclCommGetAsyncError(comm, &state); r != ncclSuccess) {
      return absl::InternalError(
          absl::StrFormat("%s: ncclCommGetAsyncError: %s", what, ncclGetErrorString(r)));
    }
    if (state == ncclSuccess) return absl::OkStatus();
    if (state != ncclInProgress) {
      return absl::InternalError(absl::StrFormat("%s: %s", what, ncclGetErrorString(state)));
    }
    if (Clock::now() > deadline) {
      ncclCommAbort(comm);
      return absl::DeadlineExceededError(absl::StrFormat("%s: not ready in time", what));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace lockstep::hw
