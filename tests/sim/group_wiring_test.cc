// The group wiring every runtime shares: votes over exactly the members,
// bindings from the faults, agreed state in the backends, coordinators per
// group object. Run here over a fake runtime that records what it was asked.

#include "sim/replica/group_wiring.h"

#include <map>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;

class FakeFused : public FusedAllReduceBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override { return absl::OkStatus(); }
};
class FakeCustom : public CustomAllReduceBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override { return absl::OkStatus(); }
};
class FakeNccl : public NcclBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override { return absl::OkStatus(); }
};

// Every rank's local state is known at once (as in the simulator); the
// runtime records the groups it voted on and built workspaces for.
class FakeRuntime : public WiringRuntime {
 public:
  FakeRuntime(const ParallelLayout& layout, const std::vector<RankWiring>& ranks)
      : layout_(layout), ranks_(ranks) {}

  absl::StatusOr<std::vector<VoteBallot>> GatherBallots(GroupId group, const VoteBallot&) override {
    votes.push_back(layout_.PeersToString(group));
    std::vector<VoteBallot> out;
    for (int p : layout_.Peers(group)) out.push_back(ranks_[static_cast<size_t>(p)].ballot);
    return out;
  }
  bool FusedKernelReachable(std::span<const int>) override { return reachable; }
  bool FullNvlink(std::span<const int>) override { return true; }
  bool SameNode(std::span<const int>) override { return true; }
  absl::StatusOr<WorkspaceHandle> CreateWorkspace(WorkspaceKind kind, GroupId group,
                                                  const WorkspaceCapacity&, uint32_t generation,
                                                  bool) override {
    workspaces.push_back(absl::StrFormat("%s%s gen %d", WorkspaceKindName(kind),
                                         layout_.PeersToString(group), generation));
    return static_cast<WorkspaceHandle>(workspaces.size() - 1);
  }
  absl::StatusOr<std::unique_ptr<FusedAllReduceBackend>> MakeFused(int, GroupId,
                                                                   WorkspaceHandle) override {
    return std::make_unique<FakeFused>();
  }
  absl::StatusOr<std::unique_ptr<CustomAllReduceBackend>> MakeCustom(
      int, GroupId, const CustomAgreedState&) override {
    return std::make_unique<FakeCustom>();
  }
  absl::StatusOr<std::unique_ptr<NcclBackend>> MakeNccl(int, GroupId) override {
    return std::make_unique<FakeNccl>();
  }

  bool reachable = true;
  std::vector<std::string> votes;
  std::vector<std::string> workspaces;

 private:
  const ParallelLayout& layout_;
  const std::vector<RankWiring>& ranks_;
};

// A fault plan that binds the MoE workspaces to an equal-size group of other
// peers and makes one rank fail its allocation.
class BindMoeToTp : public ReplicaFaults {
 public:
  WorkspaceBinding BindWorkspaces(const ParallelLayout&, WorkspaceKind kind,
                                  GroupRole intended) override {
    return kind == WorkspaceKind::kMoe ? WorkspaceBinding{GroupRole::kMoeTp, 2}
                                       : WorkspaceBinding{intended, 0};
  }
  void InitLocalState(int rank, RankLocalState& state) override {
    if (rank == 3) state.workspace_allocated = false;
  }
};

class GroupWiringTest : public ::testing::Test {
 protected:
  GroupWiringTest() {
    ParallelConfig c;
    c.tp = 4;
    c.ep = 2;
    layout_ = *ParallelLayout::Build(c);
    config_.fusion_backend = FusionBackend::kTrtllm;
    config_.capacity = {256, 4096, DType::kBf16};
    config_.custom = CustomAllReduceLimits(ServingArgs{}, Platform{});
  }

  // Wires every rank of the layout, workspaces first for all (the TP vote
  // reads their outcome), as a runtime that votes at once must.
  std::vector<RankWiring>& WireAll(ReplicaFaults* faults, FakeRuntime** runtime_out = nullptr) {
    const WorkspaceTags tags = ReplicaTags(layout_, policy_, config_, faults);
    all_ = std::vector<RankWiring>(static_cast<size_t>(layout_.world_size()));
    for (int r = 0; r < layout_.world_size(); ++r) {
      InitialLocalState(config_, r, faults, all_[static_cast<size_t>(r)]);
    }
    runtime_ = std::make_unique<FakeRuntime>(layout_, all_);
    for (int r = 0; r < layout_.world_size(); ++r) {
      EXPECT_TRUE(WireWorkspaces(config_, layout_, policy_, r, faults, *runtime_,
                                 all_[static_cast<size_t>(r)])
                      .ok());
    }
    for (int r = 0; r < layout_.world_size(); ++r) {
      EXPECT_TRUE(
          WireGroups(config_, layout_, policy_, tags, r, *runtime_, all_[static_cast<size_t>(r)])
              .ok());
    }
    if (runtime_out != nullptr) *runtime_out = runtime_.get();
    return all_;
  }

  ParallelLayout layout_;
  WiringConfig config_;
  DispatchPolicy policy_;
  std::vector<RankWiring> all_;
  std::unique_ptr<FakeRuntime> runtime_;
};

TEST_F(GroupWiringTest, EveryWorkspaceIsVotedOnByExactlyItsMembersAndTheFusedPathOverTp) {
  FakeRuntime* runtime = nullptr;
  const std::vector<RankWiring>& all = WireAll(nullptr, &runtime);
  // Rank 0 votes on its MoE workspace (on TP: tp4·ep2 merges EP and MoE-TP,
  // SGLang 0.5.23), its attention-TP workspace ([0..3] = TP here), then on
  // the fused path over TP.
  EXPECT_THAT(std::vector<std::string>(runtime->votes.begin(), runtime->votes.begin() + 2),
              ElementsAre("[0,1,2,3]", "[0,1,2,3]"));
  const RankWiring& r0 = all[0];
  EXPECT_TRUE(r0.attn_workspace.initialized);
  EXPECT_TRUE(r0.moe_workspace.initialized);
  EXPECT_EQ(layout_.PeersToString(r0.moe_workspace.group), "[0,1,2,3]");
  EXPECT_TRUE(r0.library_available);
  // Every group object has a coordinator; the tagged ones a fused backend
  // whose agreed state points at the rank's own agreed view.
  ASSERT_EQ(r0.groups.size(), layout_.objects().size());
  const RankWiring::Group& ep =
      r0.groups[static_cast<size_t>(layout_.ObjectIndex(GroupRole::kMoeEp))];
  ASSERT_NE(ep.fused, nullptr) << "MOE_EP carries the moe tag";
  EXPECT_EQ(ep.fused->agreed().workspace, &r0.moe_workspace);
  EXPECT_EQ(ep.custom, nullptr) << "SGLang builds no custom all-reduce on a separate MOE_EP object";
  const RankWiring::Group& moe_tp =
      r0.groups[static_cast<size_t>(layout_.ObjectIndex(GroupRole::kMoeTp))];
  EXPECT_EQ(moe_tp.fused, nullptr) << "MOE_TP is not tagged when MOE_EP is";
  EXPECT_EQ(moe_tp.custom, nullptr) << "nor does it build one on a separate MOE_TP object";
  ASSERT_NE(ep.norm_moe, nullptr) << "a fused norm backend on each workspace, for named calls";
  for (const RankWiring::Group& g : r0.groups) EXPECT_NE(g.coordinator, nullptr);
}

TEST_F(GroupWiringTest, AnAllocationFailureIsVotedOffOnItsMembersAndTheFusedPathOffOnTp) {
  BindMoeToTp faults;
  const std::vector<RankWiring>& all = WireAll(&faults);
  // Rank 3 failed: its attention workspace ([0..3]) is off on every rank; the
  // MoE workspace, bound by the fault to MOE_TP ([0,1] and [2,3]), is off on
  // [2,3] only, and carries the fault's generation. SGLang 0.5.23's
  // unavailable flag then turns the fused path off on the whole TP group.
  for (int r = 0; r < 4; ++r) {
    const RankWiring& w = all[static_cast<size_t>(r)];
    EXPECT_FALSE(w.attn_workspace.initialized) << "rank " << r;
    EXPECT_EQ(w.moe_workspace.initialized, r < 2) << "rank " << r;
    EXPECT_EQ(w.moe_workspace.generation, 2u);
    EXPECT_FALSE(w.library_available) << "rank " << r;
  }
  EXPECT_EQ(layout_.PeersToString(all[2].moe_workspace.group), "[2,3]");
}

TEST_F(GroupWiringTest, UnreachableGpusLeaveTheWorkspaceUninitialisedEverywhere) {
  const WorkspaceTags tags = ReplicaTags(layout_, policy_, config_, nullptr);
  all_ = std::vector<RankWiring>(4);
  for (int r = 0; r < 4; ++r) InitialLocalState(config_, r, nullptr, all_[static_cast<size_t>(r)]);
  FakeRuntime runtime(layout_, all_);
  runtime.reachable = false;
  RankWiring& w = all_[1];
  ASSERT_TRUE(WireRank(config_, layout_, policy_, tags, 1, nullptr, runtime, w).ok());
  EXPECT_FALSE(w.attn_workspace.initialized);
  EXPECT_FALSE(w.moe_workspace.initialized);
  EXPECT_EQ(w.attn_workspace.world_size, 4) << "the view still names its peers";
}

}  // namespace
}  // namespace lockstep
