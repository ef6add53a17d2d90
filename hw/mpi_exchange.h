// cuda::PeerExchange over an MPI communicator: how the ranks of a workspace
// group, one process each, swap their memory handles.

#ifndef LOCKSTEP_HW_MPI_EXCHANGE_H_
#define LOCKSTEP_HW_MPI_EXCHANGE_H_

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

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

// Every rank's `mine` (of any length) on `root`, in rank order; empty on the
// other ranks. Collective over `comm`.
inline std::vector<std::vector<uint8_t>> GatherBytes(MPI_Comm comm, std::span<const uint8_t> mine,
                                                     int root) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  const int size = static_cast<int>(mine.size());
  std::vector<int> sizes(static_cast<size_t>(world));
  MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, root, comm);
  std::vector<int> displs(static_cast<size_t>(world), 0);
  int total = 0;
  for (int r = 0; r < world; ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += sizes[static_cast<size_t>(r)];
  }
  std::vector<uint8_t> all(static_cast<size_t>(rank == root ? std::max(total, 1) : 1));
  MPI_Gatherv(mine.data(), size, MPI_BYTE, all.data(), sizes.data(), displs.data(), MPI_BYTE, root,
              comm);
  std::vector<std::vector<uint8_t>> out;
  if (rank != root) return out;
  for (int r = 0; r < world; ++r) {
    const auto* first = all.data() + displs[static_cast<size_t>(r)];
    out.emplace_back(first, first + sizes[static_cast<size_t>(r)]);
  }
  return out;
}

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_MPI_EXCHANGE_H_
