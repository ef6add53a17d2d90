#include "sim/replica/group_wiring.h"

#include <utility>

namespace lockstep {

VoteBallot BallotOf(const RankLocalState& local) {
  return VoteBallot{local.workspace_allocated, local.library_loaded, local.library_loaded};
}

WorkspaceTags ReplicaTags(const ParallelLayout& layout, const DispatchPolicy& policy,
                          const WiringConfig& config, ReplicaFaults* faults) {
  WorkspaceTags tags = policy.TagGroups(layout, config.workspaces());
  if (faults != nullptr) faults->AdjustTags(layout, tags);
  return tags;
}

void InitialLocalState(const WiringConfig& config, int rank, ReplicaFaults* faults,
                       RankWiring& wiring) {
  RankLocalState& local = wiring.local;
  local = RankLocalState{};
  local.fused_backend_flag = config.fusion_backend != FusionBackend::kNone;
  local.fp32_acc_env = false;
  if (faults != nullptr) faults->InitLocalState(rank, local);
  wiring.ballot = BallotOf(local);
}

absl::Status WireWorkspaces(const WiringConfig& config, const ParallelLayout& layout,
                            const DispatchPolicy& policy, int rank, ReplicaFaults* faults,
                            WiringRuntime& runtime, RankWiring& wiring) {
  const VoteBallot ballot = wiring.ballot;
  bool votes_ok = true;
  // Fusion workspaces, each rendezvoused on one subgroup: attention-TP, and
  // the MoE one on the policy's group (SGLang 0.5.23: the post-experts
  // reduction group). Whether one is initialised is voted across its
  // members: every member's GPU reachable (a workspace the kernel cannot
  // reach fails on all of them) and every member's own allocation done.
  auto make_workspace = [&](WorkspaceKind kind, GroupRole intended, Workspace& view,
                            WorkspaceHandle& handle) -> absl::Status {
    const WorkspaceBinding binding = faults != nullptr
                                         ? faults->BindWorkspaces(layout, kind, intended)
                                         : WorkspaceBinding{intended, 0};
    const GroupId id = layout.GroupOf(binding.role, rank);
    const std::span<const int> peers = layout.Peers(id);
    if (peers.size() <= 1) return absl::OkStatus();  // skipped, as for world <= 1
    const bool reachable = runtime.FusedKernelReachable(peers);
    absl::StatusOr<bool> allocated = runtime.Vote(id, ballot, &VoteBallot::workspace_allocated);
    if (!allocated.ok()) return allocated.status();
    const bool all_allocated = reachable && *allocated;
    votes_ok &= all_allocated;
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
  if (config.workspaces()) {
    // SGLang 0.5.23 creates the MoE workspace first, then the attention one
    // (flashinfer_comm_fusion.py:1062-1078).
    if (absl::Status s =
            make_workspace(WorkspaceKind::kMoe, policy.MoeWorkspaceRole(layout.widths()),
                           wiring.moe_workspace, wiring.moe_handle);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = make_workspace(WorkspaceKind::kAttnTp, GroupRole::kAttnTp,
                                        wiring.attn_workspace, wiring.attn_handle);
        !s.ok()) {
      return s;
    }
  }
  wiring.ballot.fusion_ok =
      ballot.library_loaded && (!policy.WorkspaceFailureDisablesFusion() || votes_ok);
  return absl::OkStatus();
}

absl::Status WireGroups(const WiringConfig& config, const ParallelLayout& layout,
                        const DispatchPolicy& policy, const WorkspaceTags& tags, int rank,
                        WiringRuntime& runtime, RankWiring& wiring) {
  // The fused path is process-wide: voted across the TP group, which holds
  // every workspace the rank shares (_sync_allreduce_unavailable_across_tp).
  const GroupId tp = layout.GroupOf(GroupRole::kTp, rank);
  bool tp_ok = wiring.ballot.fusion_ok;
  if (layout.GroupSize(tp) > 1) {
    absl::StatusOr<bool> voted = runtime.Vote(tp, wiring.ballot, &VoteBallot::fusion_ok);
    if (!voted.ok()) return voted.status();
    tp_ok = *voted;
  }
  const bool local_ok = wiring.local.library_loaded && (!policy.WorkspaceFailureDisablesFusion() ||
                                                        wiring.local.workspace_allocated);
  wiring.library_available = policy.LibraryAvailable(local_ok, tp_ok);

  const bool fused_enabled = config.fusion_backend != FusionBackend::kNone;
  FusedAgreedState base;
  base.library_available = fused_enabled && wiring.library_available;
  base.capacity_rule = policy.CapacityRule(config.fusion_backend);
  base.norm_path = config.workspaces() && !config.dp_attention;
  base.norm_max_tokens = config.norm_max_tokens;

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
    backends.tactic = &wiring.tactic;
    if (g.size > 1) {
      // A fused backend on `handle`'s workspace (`view`), agreed with `state`.
      auto make_fused = [&](WorkspaceHandle handle, const Workspace* view,
                            std::unique_ptr<FusedAllReduceBackend>& out) -> absl::Status {
        if (handle == kNoWorkspace) return absl::OkStatus();
        absl::StatusOr<std::unique_ptr<FusedAllReduceBackend>> fused =
            runtime.MakeFused(object, g.id, handle);
        if (!fused.ok()) return fused.status();
        out = *std::move(fused);
        if (out != nullptr) {
          FusedAgreedState state = base;
          state.workspace = view;
          state.group = g.id;
          state.group_world_size = g.size;
          out->set_agreed(state);
        }
        return absl::OkStatus();
      };
      // kAllReduce through the group's tag.
      const WorkspaceHandle tagged = hint == WorkspaceKind::kAttnTp ? wiring.attn_handle
                                     : hint == WorkspaceKind::kMoe  ? wiring.moe_handle
                                                                    : kNoWorkspace;
      const Workspace* tagged_view =
          hint == WorkspaceKind::kAttnTp ? &wiring.attn_workspace : &wiring.moe_workspace;
      if (absl::Status s = make_fused(tagged, tagged_view, g.fused); !s.ok()) return s;
      backends.fused = g.fused.get();
      // The fused AR + norm on each workspace, for calls that name one.
      if (policy.NormOnNamedWorkspace()) {
        if (absl::Status s = make_fused(wiring.attn_handle, &wiring.attn_workspace, g.norm_attn);
            !s.ok()) {
          return s;
        }
        if (absl::Status s = make_fused(wiring.moe_handle, &wiring.moe_workspace, g.norm_moe);
            !s.ok()) {
          return s;
        }
        backends.norm_on_attn_workspace = g.norm_attn.get();
        backends.norm_on_moe_workspace = g.norm_moe.get();
      }
      if (config.custom.available && policy.ObjectHasCustomAllReduce(objects[o])) {
        const std::span<const int> peers = layout.Peers(g.id);
        const CustomAgreedState agreed =
            ChooseCustomGeneration(config.custom, g.size, runtime.SameNode(peers),
                                   runtime.FullNvlink(peers), runtime.FusedKernelReachable(peers));
        absl::StatusOr<std::unique_ptr<CustomAllReduceBackend>> custom =
            runtime.MakeCustom(object, g.id, agreed);
        if (!custom.ok()) return custom.status();
        g.custom = *std::move(custom);
        if (g.custom != nullptr) {
          g.custom->set_agreed(agreed);
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

absl::Status WireRank(const WiringConfig& config, const ParallelLayout& layout,
                      const DispatchPolicy& policy, const WorkspaceTags& tags, int rank,
                      ReplicaFaults* faults, WiringRuntime& runtime, RankWiring& wiring) {
  if (absl::Status s = WireWorkspaces(config, layout, policy, rank, faults, runtime, wiring);
      !s.ok()) {
    return s;
  }
  return WireGroups(config, layout, policy, tags, rank, runtime, wiring);
}

}  // namespace lockstep
