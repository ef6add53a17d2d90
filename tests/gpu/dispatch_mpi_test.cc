// One process per GPU (run under mpiexec -n 2): workspaces shared through cuMem
// handles (FABRIC where the device supports them, else POSIX fds), the real
// dispatch core driving lockstep's kernels, checked against NCCL.

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>

#include "gtest/gtest.h"
#include "hw/mpi_exchange.h"
#include "tests/gpu/dispatch_rig.h"
#include "tests/gpu/gpu_test_environment.h"

namespace lockstep::testing {
namespace {

using hw::MpiExchange;

// Skips unless the job has one process per GPU and at least two of them.
#define LOCKSTEP_REQUIRE_MPI_GPUS()                                                         \
  do {                                                                                      \
    LOCKSTEP_REQUIRE_GPUS(2);                                                               \
    MpiExchange e_(MPI_COMM_WORLD);                                                         \
    if (e_.world() < 2 || e_.world() > static_cast<int>(Inventory().devices.size())) {      \
      GTEST_SKIP() << "needs one MPI process per GPU (2 or more); run under mpiexec -n 2, " \
                   << "this job has " << e_.world() << " process(es)";                      \
    }                                                                                       \
  } while (0)

TEST(DispatchMpiTest, SharedWorkspacesThroughTheDispatchCoreMatchNccl) {
  LOCKSTEP_REQUIRE_MPI_GPUS();
  MpiExchange exchange(MPI_COMM_WORLD);
  const int rank = exchange.rank(), world = exchange.world();
  ASSERT_EQ(cudaSetDevice(rank), cudaSuccess);
  auto ws = cuda::LamportWorkspace::CreateShared(
      {world, kRigMaxTokens, kRigHidden, protocol::Elem::kBf16}, rank, exchange);
  ASSERT_TRUE(ws.ok()) << ws.status();
  if (rank == 0) std::printf("workspace sharing: %s\n", (*ws)->sharing().c_str());
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitRank(&comm, world, id, rank), ncclSuccess);
  {
    DispatchRig rig(rank, ws->get(), comm);
    RunDispatchChecks(rig, exchange);
  }
  ncclCommDestroy(comm);
}

}  // namespace
}  // namespace lockstep::testing

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}
