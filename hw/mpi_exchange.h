// cuda::PeerExchange over an MPI communicator: how the ranks of a workspace
// group, one process each, swap their memory handles.

#ifndef LOCKSTEP_HW_MPI_EXCHANGE_H_
#define LOCKSTEP_HW_MPI_EXCHANGE_H_

#include <mpi.h>

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/cuda/workspace.h"

namespace lockstep::hw {

class MpiExchange : public cuda::PeerExchange {
 public:
  explicit MpiExchange(MPI_Comm comm) : comm_(comm) {}

  int rank() const override {
    int r = 0;
    MPI_Comm_rank(comm_, &r);
    return r;
  }
  int world() const override {
    int w = 0;
    MPI_Comm_size(comm_, &w);
    return w;
  }
  absl::Status AllGather(std::span<const uint8_t> mine, std::span<uint8_t> all) override {
    if (all.size() < mine.size() * static_cast<size_t>(world())) {
      return absl::InvalidArgumentError("all-gather destination too small");
    }
    const int rc = MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                                 static_cast<int>(mine.size()), MPI_BYTE, comm_);
    return rc == MPI_SUCCESS ? absl::OkStatus()
                             : absl::InternalError(absl::StrFormat("MPI_Allgather: error %d", rc));
  }

 private:
  MPI_Comm comm_;
};

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_MPI_EXCHANGE_H_
