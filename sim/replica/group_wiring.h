// Group wiring: the steps that make one rank's groups usable, written once for
// every runtime (the simulator and the hardware runner). "Every rank votes" is
// lockstep's central claim, and this is where it is kept:
//
//   1. the workspace tags (the policy's TagGroups, then the faults' changes);
//   2. the rank's raw local state (what it alone sees);
//   3. each fusion workspace: its binding, its rendezvous vote (every member
//      reachable and allocated) and its buffers, and the agreed view the
//      dispatch core reads (policy.WorkspaceInitialized of the vote);
//   4. the fused path's vote across the TP group (SGLang's
//      _sync_allreduce_unavailable_across_tp: the library, and in 0.5.23
//      every workspace of the TP group);
//   5. per group object: the backends the runtime builds (fused on the tagged
//      workspace, custom all-reduce, NCCL), their agreed state, and the
//      GroupCoordinator.
//
// A runtime supplies the votes, the reachability facts and the backends
// (WiringRuntime). Usage:
//
//   const WorkspaceTags tags = ReplicaTags(layout, policy, config, faults);
//   RankWiring wiring;
//   InitialLocalState(config, rank, faults, wiring);
//   ...  // every rank's local state exists before any vote
//   absl::Status s = WireRank(config, layout, policy, tags, rank, faults, runtime, wiring);
//   wiring.groups[layout.ObjectIndex(GroupRole::kTp)].coordinator->AllReduce(tensor);

#ifndef LOCKSTEP_SIM_REPLICA_GROUP_WIRING_H_
#define LOCKSTEP_SIM_REPLICA_GROUP_WIRING_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dispatch/backend.h"
#include "dispatch/group_coordinator.h"
#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "dispatch/rank_local_state.h"
#include "dispatch/serving_args.h"
#include "dispatch/workspace.h"
#include "sim/replica/replica_faults.h"

namespace lockstep {

// The serving engine's options the wiring reads, resolved (the scenario's
// `dispatch:`, the model and the platform; sim/replica/replica_config.h).
struct WiringConfig {
  FusionBackend fusion_backend = FusionBackend::kNone;
  WorkspaceCapacity capacity;      // fusion workspaces' sizing
  int64_t norm_max_tokens = 2048;  // the fused AR + norm's batch limit
  bool dp_attention = false;
  // The custom all-reduce's limits (CustomAgreedState::available false: off);
  // the group facts are filled per group.
  CustomAgreedState custom;

  // Workspaces and tags exist (a FlashInfer backend other than cutedsl,
  // distributed/bootstrap.py:257-261 @ 0.5.23).
  bool workspaces() const { return FusedAllReduceOnlyEnabled(fusion_backend); }
};

// What one rank brings to the set-up votes: from its raw local state, and
// after its workspace votes, whether the fused path works for it.
struct VoteBallot {
  bool workspace_allocated = true;
  bool library_loaded = true;
  bool fusion_ok = true;  // library loaded and, where failures disable fusion, every vote passed
};
VoteBallot BallotOf(const RankLocalState& local);

// A fusion workspace's buffers as a runtime built them (opaque to the
// wiring; -1: none).
using WorkspaceHandle = int32_t;
inline constexpr WorkspaceHandle kNoWorkspace = -1;

// What a runtime provides to wire one rank. Every member of a group calls the
// group's methods in the same order (the wiring's order), so a runtime may
// implement them as collectives.
class WiringRuntime {
 public:
  virtual ~WiringRuntime() = default;

  // Every member's ballot, in the group's peer order (a collective over
  // `group`; `mine` is this rank's).
  virtual absl::StatusOr<std::vector<VoteBallot>> GatherBallots(GroupId group,
                                                                const VoteBallot& mine) = 0;
  // Whether the GPUs of `peers` reach each other for the fused kernel (one
  // NVLink node, or one MNNVL clique).
  // Whether every member's ballot says yes to `field`: a vote over `group`
  // (every member calls it). By default every ballot is gathered; a runtime
  // that holds them all may answer once per group.
  virtual absl::StatusOr<bool> Vote(GroupId group, const VoteBallot& mine,
                                    bool VoteBallot::*field) {
    absl::StatusOr<std::vector<VoteBallot>> ballots = GatherBallots(group, mine);
    if (!ballots.ok()) return ballots.status();
    for (const VoteBallot& b : *ballots) {
      if (!(b.*field)) return false;
    }
    return true;
  }
  virtual bool FusedKernelReachable(std::span<const int> peers) = 0;
  // Topology facts the custom all-reduce's predicates read.
  virtual bool FullNvlink(std::span<const int> peers) = 0;
  virtual bool SameNode(std::span<const int> peers) = 0;

  // The buffers of the `kind` workspace rendezvoused on `group` (every member
  // calls it). `reachable`: whether the members' GPUs reach each other; a
  // runtime may build nothing when they do not (the vote then says
  // uninitialised on every member, and nothing launches on it).
  virtual absl::StatusOr<WorkspaceHandle> CreateWorkspace(WorkspaceKind kind, GroupId group,
                                                          const WorkspaceCapacity& capacity,
                                                          uint32_t generation, bool reachable) = 0;
  // The backends of group object `object` (its subgroup `group`, of two or
  // more ranks). Null: the runtime has no such backend.
  virtual absl::StatusOr<std::unique_ptr<FusedAllReduceBackend>> MakeFused(
      int object, GroupId group, WorkspaceHandle workspace) = 0;
  // `agreed`: what the members agreed on the group (its size bound sizes a
  // runtime's staging buffers; every member calls it, so a runtime may
  // rendezvous here).
  virtual absl::StatusOr<std::unique_ptr<CustomAllReduceBackend>> MakeCustom(
      int object, GroupId group, const CustomAgreedState& agreed) = 0;
  virtual absl::StatusOr<std::unique_ptr<NcclBackend>> MakeNccl(int object, GroupId group) = 0;
};

// One rank's wired groups. Owns the backends and coordinators; the agreed
// workspace views are referenced by the fused backends (keep the object in
// place once wired).
struct RankWiring {
  struct Group {
    GroupId id;
    int size = 1;
    std::unique_ptr<FusedAllReduceBackend> fused;  // kAllReduce through the tag
    // The fused AR + norm on each workspace (SGLang 0.5.23: the call names it).
    std::unique_ptr<FusedAllReduceBackend> norm_attn;
    std::unique_ptr<FusedAllReduceBackend> norm_moe;
    std::unique_ptr<CustomAllReduceBackend> custom;
    std::unique_ptr<NcclBackend> nccl;
    std::unique_ptr<GroupCoordinator> coordinator;
  };

  RankLocalState local;  // raw state; the reference policy never reads it
  VoteBallot ballot;     // what the rank brings to the votes (after step 3: fusion_ok)
  // The dispatch core's (agreed) view of the rank's workspaces.
  Workspace attn_workspace;
  Workspace moe_workspace;
  WorkspaceHandle attn_handle = kNoWorkspace;
  WorkspaceHandle moe_handle = kNoWorkspace;
  bool library_available = false;  // the TP vote, as the policy read it
  // The fused kernel's tactic every group's dispatch reads (the start-up
  // autotuner sets it: sim/replica/workload_program.h, Autotune).
  FusedTactic tactic;
  std::vector<Group> groups;  // by group object

  RankWiring() = default;
  RankWiring(const RankWiring&) = delete;
  RankWiring& operator=(const RankWiring&) = delete;
  RankWiring(RankWiring&&) = default;
  RankWiring& operator=(RankWiring&&) = default;

  GroupCoordinator& coordinator(int object) {
    return *groups[static_cast<size_t>(object)].coordinator;
  }
};

// Step 1: the tags every rank applies (the same on every rank).
WorkspaceTags ReplicaTags(const ParallelLayout& layout, const DispatchPolicy& policy,
                          const WiringConfig& config, ReplicaFaults* faults);

// Step 2: rank `rank`'s raw local state before anything is agreed; also sets
// the ballot it brings to the votes.
void InitialLocalState(const WiringConfig& config, int rank, ReplicaFaults* faults,
                       RankWiring& wiring);

// Step 3 for rank `rank`: its fusion workspaces and their votes. Every rank
// must finish step 3 before any starts step 4 (the TP vote reads every
// member's workspace outcome): a runtime whose votes are collectives gets
// that for free; one that wires ranks in turn runs step 3 for all first.
absl::Status WireWorkspaces(const WiringConfig& config, const ParallelLayout& layout,
                            const DispatchPolicy& policy, int rank, ReplicaFaults* faults,
                            WiringRuntime& runtime, RankWiring& wiring);

// Steps 4-5 for rank `rank`: the fused path's vote across TP, then per group
// object its backends and coordinator.
absl::Status WireGroups(const WiringConfig& config, const ParallelLayout& layout,
                        const DispatchPolicy& policy, const WorkspaceTags& tags, int rank,
                        WiringRuntime& runtime, RankWiring& wiring);

// Steps 3-5 for one rank, for runtimes whose votes are collectives.
absl::Status WireRank(const WiringConfig& config, const ParallelLayout& layout,
                      const DispatchPolicy& policy, const WorkspaceTags& tags, int rank,
                      ReplicaFaults* faults, WiringRuntime& runtime, RankWiring& wiring);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_GROUP_WIRING_H_
