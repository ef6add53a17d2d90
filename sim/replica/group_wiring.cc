#include "sim/replica/group_wiring.h"

#include <utility>

namespace lockstep {
namespace {

// Whether every ballot says yes to `field`.
bool All(const std::vector<VoteBallot>& ballots, bool VoteBallot::*field) {
  for (const VoteBallot& b : ballots) {
    if (!(b.*field)) return false;
  }
  return true;
}

}  // namespace

VoteBallot BallotOf(const RankLocalState& local) {
  return VoteBallot{local.workspace_allocated, local.library_loaded};
}

bool HasCustomAllReduce(const GroupObject& object) {
  for (GroupRole r : object.roles) {
    if (r == GroupRole::kTp || r == GroupRole::kAttnTp || r == GroupRole::kMoeTp) return true;
  }
  return false;
}

WorkspaceTags ReplicaTags(const ParallelLayout& layout, const DispatchPolicy& policy,
                          const WiringConfig& config, ReplicaFaults* faults) {
  WorkspaceTags tags = policy.TagGroups(layout, config.fused_backend);
  if (faults != nullptr) faults->AdjustTags(layout, tags);
  return tags;
}

RankLocalState InitialLocalState(const WiringConfig& config, int rank, ReplicaFaults* faults) {
  RankLocalState local;
  local.fused_backend_flag = config.fused_backend;
  local.fp32_acc_env = false;
  if (faults != nullptr) faults->InitLocalState(rank, local);
  return local;
}

absl::Status WireRank(const WiringConfig& config, const ParallelLayout& layout,
                      const DispatchPolicy& policy, const WorkspaceTags& tags, int rank,
                      ReplicaFaults* faults, WiringRuntime& runtime, RankWiring& wiring) {
  const VoteBallot ballot = BallotOf(wiring.local);

  // Fusion workspaces, each rendezvoused on one subgroup: attention-TP, and
  // the MoE one on MOE_EP when moe_ep > 1, else MOE_TP. Whether one is
  // initialised is voted across its members: every member's GPU reachable
  // (a workspace the kernel cannot reach fails on all of them) and every
  // member's own allocation done.
  auto make_workspace = [&](WorkspaceKind kind, GroupRole intended, Workspace& view,
                            WorkspaceHandle& handle) -> absl::Status {
    const WorkspaceBinding binding = faults != nullptr
                                         ? faults->BindWorkspaces(layout, kind, intended)
                                         : WorkspaceBinding{intended, 0};
    const GroupId id = layout.GroupOf(binding.role, rank);
    const std::span<const int> peers = layout.Peers(id);
    if (peers.size() <= 1) return absl::OkStatus();
    const bool reachable = runtime.FusedKernelReachable(peers);
    absl::StatusOr<std::vector<VoteBallot>> ballots = runtime.GatherBallots(id, ballot);
    if (!ballots.ok()) return ballots.status();
    const bool all_allocated = reachable && All(*ballots, &VoteBallot::workspace_allocated);
    absl::StatusOr<WorkspaceHandle> created =
        runtime.CreateWorkspace(kind, id, config.capacity, binding.generation, reachable);
    if (!created.ok()) return created.status();
    handle = *created;
    view.kind = kind;
    view.group = id;
    view.world_size = static_cast<int>(peers.size());
    view.capacity = config.capacity;
    view.generation = binding.generation;
    view.initialized = policy.WorkspaceInitialized(wiring.local.workspace_allocated, all_allocated);
    return absl::OkStatus();
  };
  if (config.fused_backend) {
    if (absl::Status s = make_workspace(WorkspaceKind::kAttnTp, GroupRole::kAttnTp,
                                        wiring.attn_workspace, wiring.attn_handle);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = make_workspace(WorkspaceKind::kMoe, MoeWorkspaceRole(layout.widths()),
                                        wiring.moe_workspace, wiring.moe_handle);
        !s.ok()) {
      return s;
    }
  }

  // Library availability is process-wide: voted across the TP group, which
  // holds every workspace the rank shares.
  const GroupId tp = layout.GroupOf(GroupRole::kTp, rank);
  bool tp_loaded = ballot.library_loaded;
  if (layout.GroupSize(tp) > 1) {
    absl::StatusOr<std::vector<VoteBallot>> ballots = runtime.GatherBallots(tp, ballot);
    if (!ballots.ok()) return ballots.status();
    tp_loaded = All(*ballots, &VoteBallot::library_loaded);
  }
  wiring.library_available = policy.LibraryAvailable(wiring.local.library_loaded, tp_loaded);

  const auto& objects = layout.objects();
  wiring.groups.clear();
  wiring.groups.resize(objects.size());
  for (size_t o = 0; o < objects.size(); ++o) {
    RankWiring::Group& g = wiring.groups[o];
    g.id = layout.GroupOf(objects[o].roles.front(), rank);
    g.size = layout.GroupSize(g.id);
    const int object = static_cast<int>(o);
    const WorkspaceKind hint = tags.ForObject(object);
    GroupBackends backends;
    backends.local = &wiring.local;
    if (g.size > 1) {
      const WorkspaceHandle handle = hint == WorkspaceKind::kAttnTp ? wiring.attn_handle
                                     : hint == WorkspaceKind::kMoe  ? wiring.moe_handle
                                                                    : kNoWorkspace;
      if (handle != kNoWorkspace) {
        absl::StatusOr<std::unique_ptr<FusedAllReduceBackend>> fused =
            runtime.MakeFused(object, g.id, handle);
        if (!fused.ok()) return fused.status();
        g.fused = *std::move(fused);
        if (g.fused != nullptr) {
          const Workspace* view =
              hint == WorkspaceKind::kAttnTp ? &wiring.attn_workspace : &wiring.moe_workspace;
          g.fused->set_agreed(FusedAgreedState{config.fused_backend && wiring.library_available,
                                               view, g.id, g.size});
          backends.fused = g.fused.get();
        }
      }
      if (config.custom_allreduce && HasCustomAllReduce(objects[o])) {
        g.custom = runtime.MakeCustom(object, g.id);
        if (g.custom != nullptr) {
          const std::span<const int> peers = layout.Peers(g.id);
          g.custom->set_agreed(CustomAgreedState{true, config.custom_max_bytes, g.size,
                                                 runtime.FullNvlink(peers),
                                                 runtime.SameNode(peers)});
          backends.custom = g.custom.get();
        }
      }
      absl::StatusOr<std::unique_ptr<NcclBackend>> nccl = runtime.MakeNccl(object, g.id);
      if (!nccl.ok()) return nccl.status();
      g.nccl = *std::move(nccl);
      backends.nccl = g.nccl.get();
    }
    g.coordinator = std::make_unique<GroupCoordinator>(
        objects[o].name, g.id, g.size, layout.RankInGroup(g.id, rank), hint, backends, &policy);
  }
  return absl::OkStatus();
}

}  // namespace lockstep
