// One process per GPU (run under mpiexec -n 2): workspaces shared through cuMem
// handles (FABRIC where the device supports them, else POSIX fds), the real
// dispatch core driving lockstep's kernels, checked against NCCL.

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <random>
#include <vector>

#include "dispatch/serving_args.h"
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

// The custom all-reduce between processes: regions shared through cuMem
// handles, the dispatch core choosing custom up to the agreed bound and NCCL
// past it, results against NCCL's; then one call on inputs registered
// through CUDA IPC (the graph path's registration, RegisterGraphInputsShared).
TEST(DispatchMpiTest, SharedCustomRegionsThroughTheDispatchCoreMatchNccl) {
  LOCKSTEP_REQUIRE_MPI_GPUS();
  MpiExchange exchange(MPI_COMM_WORLD);
  const int rank = exchange.rank(), world = exchange.world();
  ASSERT_EQ(cudaSetDevice(rank), cudaSuccess);
  cuda::WorkspaceSpec spec;
  spec.world = world;
  spec.custom_bytes = int64_t{1} << 20;
  spec.custom_push_bytes = spec.custom_bytes;  // v2 pushes up to the bound at world 2
  spec.graph_rows = 4;
  auto region = cuda::LamportWorkspace::CreateShared(spec, rank, exchange);
  ASSERT_TRUE(region.ok()) << region.status();
  ncclUniqueId id;
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  ASSERT_EQ(ncclCommInitRank(&comm, world, id, rank), ncclSuccess);
  {
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cuda::GpuCustomBackend custom(region->get(), stream);
    cuda::GpuNcclBackend nccl(comm, stream);
    CustomAgreedState agreed = ChooseCustomGeneration(
        CustomAllReduceLimits(ServingArgs{}, Platform{}), world, true, true, true);
    agreed.max_bytes = spec.custom_bytes;
    custom.set_agreed(agreed);
    GroupBackends b;
    b.custom = &custom;
    b.nccl = &nccl;
    DispatchPolicy policy;
    GroupCoordinator coordinator("tp", GroupId{0}, world, rank, WorkspaceKind::kNone, b, &policy);
    const int64_t hidden = kRigHidden;  // 14 KiB a token of bf16: 73 tokens fit 1 MiB
    void *data = nullptr, *reference = nullptr;
    cudaMalloc(&data, static_cast<size_t>(2 * 128 * hidden));
    cudaMalloc(&reference, static_cast<size_t>(2 * 128 * hidden));
    uint32_t seed = 1;
    for (const int64_t tokens : {int64_t{1}, int64_t{7}, int64_t{73}, int64_t{74}, int64_t{3}}) {
      const int64_t elems = tokens * hidden;
      std::vector<uint16_t> host(static_cast<size_t>(elems));
      std::mt19937 gen(seed++ * 131u + static_cast<uint32_t>(rank));
      std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
      for (auto& h : host)
        h = static_cast<uint16_t>(protocol::FromFloat(dist(gen), protocol::Elem::kBf16));
      cudaMemcpy(data, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
      cudaMemcpy(reference, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
      Tensor t{TensorDesc::Matrix(tokens, hidden, DType::kBf16), data};
      DecisionRecord record;
      const absl::Status s = coordinator.AllReduce(t, &record);
      ASSERT_TRUE(s.ok()) << s;
      EXPECT_EQ(record.backend, tokens <= 73 ? BackendKind::kCustom : BackendKind::kNccl)
          << tokens << " tokens";
      Tensor ref{t.desc, reference};
      DecisionRecord nccl_record;
      ASSERT_TRUE(nccl.AllReduce(ref, nccl_record).ok());
      std::vector<uint16_t> got(host.size()), want(host.size());
      cudaMemcpy(got.data(), data, got.size() * 2, cudaMemcpyDeviceToHost);
      cudaMemcpy(want.data(), reference, want.size() * 2, cudaMemcpyDeviceToHost);
      EXPECT_TRUE(SameOnEveryRank(exchange, Fnv1a(got))) << tokens << " tokens: ranks disagree";
      if (world == 2) {
        EXPECT_EQ(got, want) << tokens << " tokens: differs from NCCL";
      }
    }
    // Registered inputs through CUDA IPC, then a captured call's launch on
    // them: v2's 2shot_pull, which reduces each shard into every peer's
    // registered input and copies its own out.
    const void* mine[] = {data};
    ASSERT_TRUE((*region)->RegisterGraphInputsShared(mine, exchange).ok());
    DecisionRecord record;
    record.backend = BackendKind::kCustom;
    record.kernel_flags = kReferenceCustomKernelFlags;
    record.algorithm = Algorithm::kTwoShotPull;
    record.graph_inputs = true;
    record.blocks = 64;
    const int64_t elems = 2048;
    std::vector<uint16_t> host(static_cast<size_t>(elems),
                               static_cast<uint16_t>(protocol::FromFloat(
                                   static_cast<float>(rank + 1), protocol::Elem::kBf16)));
    cudaMemcpy(data, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
    absl::StatusOr<cuda::LamportLaunch> l =
        custom.MakeLaunch(TensorDesc::Matrix(1, elems, DType::kBf16), data, reference, record,
                          (*region)->graph_row(0));
    ASSERT_TRUE(l.ok()) << l.status();
    ASSERT_TRUE(cuda::LaunchLamport(*l, stream).ok());
    const absl::Status s = cuda::CheckLamportStatus(*l, stream);
    ASSERT_TRUE(s.ok()) << s;
    std::vector<uint16_t> got(host.size());
    cudaMemcpy(got.data(), reference, got.size() * 2, cudaMemcpyDeviceToHost);
    const float want = static_cast<float>(world * (world + 1) / 2);
    EXPECT_EQ(protocol::ToFloat(got[0], protocol::Elem::kBf16), want);
    EXPECT_EQ(protocol::ToFloat(got.back(), protocol::Elem::kBf16), want);
    cudaFree(data);
    cudaFree(reference);
    cudaStreamDestroy(stream);
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
