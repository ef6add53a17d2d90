// The hardware runner as a wiring runtime (sim/replica/group_wiring.h): one
// process per GPU, so every vote is an MPI all-gather over the group's
// members, every workspace a cuMem allocation whose handles the members swap
// over MPI, and every group object a NCCL communicator split from the world's
// (non-blocking, so the watchdog can give up on it).

#ifndef LOCKSTEP_HW_GPU_WIRING_H_
#define LOCKSTEP_HW_GPU_WIRING_H_

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dispatch/group_layout.h"
#include "hw/bounded_wait.h"
#include "hw/fabric.h"
#include "kernels/cuda/gpu_backends.h"
#include "kernels/cuda/workspace.h"
#include "sim/replica/group_wiring.h"

namespace lockstep::hw {

// What each group object of a rank holds on GPUs besides its backends.
struct GpuGroup {
  std::string name;  // "attn_tp [0,1]"
  MPI_Comm mpi = MPI_COMM_NULL;
  ncclComm_t nccl = nullptr;
  cuda::GpuFusedBackend* fused = nullptr;  // owned by the rank's RankWiring
  cuda::GpuCustomBackend* custom = nullptr;
  cuda::GpuNcclBackend* nccl_backend = nullptr;
};

class GpuWiringRuntime final : public WiringRuntime {
 public:
  struct Options {
    int rank = 0;
    int device = 0;
    cudaStream_t stream = nullptr;
    ncclComm_t world_nccl = nullptr;  // initialised; the groups are split from it
    uint64_t kernel_wait_ns = 0;
    uint64_t watchdog_ns = 0;
    Clock::time_point deadline;  // of the whole set-up
    // Before every backend call (call counting, injected kernel errors).
    cuda::BeforeCallHook before_call;
  };

  // `fabric` holds every rank's FabricInfo (all-gathered); `groups` receives
  // one entry per group object.
  GpuWiringRuntime(const ParallelLayout& layout, const std::vector<FabricInfo>& fabric,
                   Options options, std::vector<GpuGroup>& groups)
      : layout_(layout), fabric_(fabric), options_(std::move(options)), groups_(groups) {
    groups_.resize(layout.objects().size());
  }

  absl::StatusOr<std::vector<VoteBallot>> GatherBallots(GroupId group,
                                                        const VoteBallot& mine) override;
  bool FusedKernelReachable(std::span<const int> peers) override {
    return hw::FusedKernelReachable(fabric_, peers);
  }
  bool FullNvlink(std::span<const int> peers) override { return SameHost(fabric_, peers); }
  bool SameNode(std::span<const int> peers) override { return SameHost(fabric_, peers); }
  absl::StatusOr<WorkspaceHandle> CreateWorkspace(WorkspaceKind kind, GroupId group,
                                                  const WorkspaceCapacity& capacity,
                                                  uint32_t generation, bool reachable) override;
  absl::StatusOr<std::unique_ptr<FusedAllReduceBackend>> MakeFused(
      int object, GroupId group, WorkspaceHandle workspace) override;
  // The custom all-reduce: a region (staging buffer of the agreed size
  // bound, barrier flags) shared by the group's members through cuMem
  // handles swapped over MPI; no region where the agreed state says the
  // backend is unavailable (its predicates refuse every call, on every
  // member alike).
  absl::StatusOr<std::unique_ptr<CustomAllReduceBackend>> MakeCustom(
      int object, GroupId group, const CustomAgreedState& agreed) override;
  absl::StatusOr<std::unique_ptr<NcclBackend>> MakeNccl(int object, GroupId group) override;

  // How the workspaces' peers reach them (LamportWorkspace::sharing()), or "none".
  const std::string& sharing() const { return sharing_; }
  // The workspaces (null where the members' GPUs do not reach each other),
  // then the custom all-reduce regions, in creation order.
  std::vector<std::unique_ptr<cuda::LamportWorkspace>>& workspaces() { return workspaces_; }

 private:
  // MPI_Comm_split of the world by `group` (every rank calls it: collective).
  MPI_Comm SplitFor(GroupId group);

  const ParallelLayout& layout_;
  const std::vector<FabricInfo>& fabric_;
  Options options_;
  std::vector<GpuGroup>& groups_;
  std::vector<std::unique_ptr<cuda::LamportWorkspace>> workspaces_;
  std::string sharing_ = "none";
};

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_GPU_WIRING_H_
