#include "hw/gpu_wiring.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "dispatch/custom_launch.h"
#include "hw/mpi_exchange.h"
#include "kernels/cuda/nccl_status.h"

namespace lockstep::hw {

MPI_Comm GpuWiringRuntime::SplitFor(GroupId group) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(group.value),
                 layout_.RankInGroup(group, options_.rank), &comm);
  return comm;
}

absl::StatusOr<std::vector<VoteBallot>> GpuWiringRuntime::GatherBallots(GroupId group,
                                                                        const VoteBallot& mine) {
  MPI_Comm comm = SplitFor(group);
  const uint8_t bytes[2] = {static_cast<uint8_t>(mine.workspace_allocated),
                            static_cast<uint8_t>(mine.library_loaded)};
  const size_t size = layout_.Peers(group).size();
  std::vector<uint8_t> all(2 * size);
  MPI_Request request;
  MPI_Iallgather(bytes, 2, MPI_BYTE, all.data(), 2, MPI_BYTE, comm, &request);
  absl::Status waited =
      WaitMpiRequest(&request, options_.deadline,
                     absl::StrFormat("set-up vote over %s", layout_.PeersToString(group)));
  MPI_Comm_free(&comm);
  if (!waited.ok()) return waited;
  std::vector<VoteBallot> ballots(size);
  for (size_t i = 0; i < size; ++i) {
    ballots[i] = VoteBallot{all[2 * i] != 0, all[2 * i + 1] != 0};
  }
  return ballots;
}

absl::StatusOr<WorkspaceHandle> GpuWiringRuntime::CreateWorkspace(WorkspaceKind, GroupId group,
                                                                  const WorkspaceCapacity& capacity,
                                                                  uint32_t, bool reachable) {
  // The buffers exist wherever the members' GPUs reach each other over
  // NVLink; elsewhere the vote says uninitialised on every member and the
  // dispatch core never launches on the workspace.
  workspaces_.emplace_back();
  const auto handle = static_cast<WorkspaceHandle>(workspaces_.size() - 1);
  if (!reachable) return handle;
  absl::StatusOr<protocol::Elem> elem = cuda::ElemOf(capacity.dtype);
  if (!elem.ok()) return elem.status();
  MPI_Comm comm = SplitFor(group);
  MpiExchange exchange(comm);
  absl::StatusOr<std::unique_ptr<cuda::LamportWorkspace>> created =
      cuda::LamportWorkspace::CreateShared({static_cast<int>(layout_.Peers(group).size()),
                                            capacity.max_tokens, capacity.hidden, *elem},
                                           options_.device, exchange);
  MPI_Comm_free(&comm);
  if (!created.ok()) return created.status();
  workspaces_.back() = *std::move(created);
  sharing_ = workspaces_.back()->sharing();
  return handle;
}

absl::StatusOr<std::unique_ptr<FusedAllReduceBackend>> GpuWiringRuntime::MakeFused(
    int object, GroupId, WorkspaceHandle workspace) {
  auto fused = std::make_unique<cuda::GpuFusedBackend>(
      workspaces_[static_cast<size_t>(workspace)].get(), options_.stream);
  fused->set_wait_budget_ns(options_.kernel_wait_ns);
  fused->set_before_call(options_.before_call);
  groups_[static_cast<size_t>(object)].fused = fused.get();
  return fused;
}

absl::StatusOr<std::unique_ptr<CustomAllReduceBackend>> GpuWiringRuntime::MakeCustom(
    int object, GroupId group, const CustomAgreedState& agreed) {
  cuda::LamportWorkspace* region = nullptr;
  if (agreed.available && agreed.max_bytes > 0) {
    cuda::WorkspaceSpec spec;
    spec.world = static_cast<int>(layout_.Peers(group).size());
    // The staging buffer holds the largest message the predicates admit
    // (max_bytes inclusive), in whole 16-byte vectors.
    spec.custom_bytes = (agreed.max_bytes + 15) / 16 * 16;
    if (agreed.generation >= 2) {
      // v2's planes as SGLang sizes them (whole KiB: the thresholds the
      // dispatch core selects by are clipped to these, not to the bound).
      const CustomV2Config v2 = CustomV2ConfigFor(agreed.sm, spec.world, agreed.max_bytes);
      spec.custom_bytes = std::max(spec.custom_bytes, v2.pull_bytes);
      spec.custom_push_bytes = v2.push_slot_bytes;
    }
    MPI_Comm comm = SplitFor(group);
    MpiExchange exchange(comm);
    absl::StatusOr<std::unique_ptr<cuda::LamportWorkspace>> created =
        cuda::LamportWorkspace::CreateShared(spec, options_.device, exchange);
    MPI_Comm_free(&comm);
    if (!created.ok()) {
      return absl::Status(
          created.status().code(),
          absl::StrFormat("custom all-reduce of %s %s: %s",
                          layout_.objects()[static_cast<size_t>(object)].name,
                          layout_.PeersToString(group), created.status().message()));
    }
    workspaces_.push_back(*std::move(created));
    region = workspaces_.back().get();
  }
  auto custom = std::make_unique<cuda::GpuCustomBackend>(region, options_.stream);
  custom->set_wait_budget_ns(options_.kernel_wait_ns);
  custom->set_before_call(options_.before_call);
  groups_[static_cast<size_t>(object)].custom = custom.get();
  return custom;
}

absl::StatusOr<std::unique_ptr<NcclBackend>> GpuWiringRuntime::MakeNccl(int object, GroupId group) {
  GpuGroup& g = groups_[static_cast<size_t>(object)];
  g.name = absl::StrFormat("%s %s", layout_.objects()[static_cast<size_t>(object)].name,
                           layout_.PeersToString(group));
  const int key = layout_.RankInGroup(group, options_.rank);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // the watchdog must be able to give up on a call
  if (absl::Status s = cuda::NcclStatus(
          ncclCommSplit(options_.world_nccl, static_cast<int>(group.value), key, &g.nccl, &config),
          "ncclCommSplit for " + g.name, /*in_progress_ok=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WaitNcclReady(options_.world_nccl, options_.deadline, "ncclCommSplit");
      !s.ok()) {
    return s;
  }
  if (g.nccl != nullptr) {
    if (absl::Status s = WaitNcclReady(g.nccl, options_.deadline, "NCCL " + g.name); !s.ok()) {
      return s;
    }
  }
  g.mpi = SplitFor(group);
  auto nccl = std::make_unique<cuda::GpuNcclBackend>(g.nccl, options_.stream);
  nccl->set_watchdog_ns(options_.watchdog_ns);
  nccl->set_before_call(options_.before_call);
  nccl->set_name(g.name);
  g.nccl_backend = nccl.get();
  return nccl;
}

}  // namespace lockstep::hw
