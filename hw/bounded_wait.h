// Every wait of the hardware runner outside a kernel is bounded: a peer that
// stopped (failed, killed, or elsewhere in the program) must not hold the
// others forever. A wait that expires is a DeadlineExceeded status naming
// what it waited for; the caller turns it into a fail_stop finding.

#ifndef LOCKSTEP_HW_BOUNDED_WAIT_H_
#define LOCKSTEP_HW_BOUNDED_WAIT_H_

#include <mpi.h>
#include <nccl.h>

#include <chrono>
#include <string_view>

#include "absl/status/status.h"

namespace lockstep::hw {

using Clock = std::chrono::steady_clock;

// Waits for a non-blocking MPI request until `deadline`; past it the request
// is cancelled and DeadlineExceeded names `what`.
absl::Status WaitMpiRequest(MPI_Request* request, Clock::time_point deadline,
                            std::string_view what);

// Waits for a non-blocking NCCL communicator to leave ncclInProgress (its
// initialisation or split); past `deadline` it is aborted.
absl::Status WaitNcclReady(ncclComm_t comm, Clock::time_point deadline, std::string_view what);

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_BOUNDED_WAIT_H_
