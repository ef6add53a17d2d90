#include "dispatch/workspace.h"

#include "dispatch/layer_boundary.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

ParallelLayout Build(int tp, int ep, int dp = 1) {
  ParallelConfig c;
  c.tp = tp;
  c.ep = ep;
  c.dp = dp;
  c.dp_attention = dp > 1;
  return *ParallelLayout::Build(c);
}

int CountTagged(const WorkspaceTags& tags, WorkspaceKind kind) {
  int n = 0;
  for (WorkspaceKind k : tags.by_object) n += k == kind ? 1 : 0;
  return n;
}

TEST(WorkspaceTagsTest, HybridTagsExactlyOneMoeGroupTheExpertGroup) {
  const ParallelLayout layout = Build(4, 2);
  const WorkspaceTags tags = TagGroupsForFusedAllReduce(layout, true);
  EXPECT_EQ(CountTagged(tags, WorkspaceKind::kMoe), 1);
  EXPECT_EQ(tags.ForObject(layout.ObjectIndex(GroupRole::kMoeEp)), WorkspaceKind::kMoe);
  EXPECT_EQ(tags.ForObject(layout.ObjectIndex(GroupRole::kMoeTp)), WorkspaceKind::kNone);
}

TEST(WorkspaceTagsTest, WithoutExpertParallelismTheMoeTpGroupOwnsTheMoeWorkspace) {
  const ParallelLayout layout = Build(8, 1, 2);  // moe_tp = 8 = TP object, attn_tp = 4
  EXPECT_EQ(MoeTagRole(layout.widths()), GroupRole::kMoeTp);
  const WorkspaceTags tags = TagGroupsForFusedAllReduce(layout, true);
  EXPECT_EQ(CountTagged(tags, WorkspaceKind::kMoe), 1);
  EXPECT_EQ(tags.ForObject(layout.ObjectIndex(GroupRole::kMoeTp)), WorkspaceKind::kMoe);
  EXPECT_EQ(tags.ForObject(layout.ObjectIndex(GroupRole::kAttnTp)), WorkspaceKind::kAttnTp);
}

TEST(WorkspaceTagsTest, FullTpGroupIsNotTaggedUnderDpAttentionWithExperts) {
  const ParallelLayout layout = Build(8, 2, 8);  // attn_tp = 1, moe_ep = 2, moe_tp = 4
  const WorkspaceTags tags = TagGroupsForFusedAllReduce(layout, true);
  EXPECT_EQ(tags.ForObject(layout.ObjectIndex(GroupRole::kTp)), WorkspaceKind::kNone);
  EXPECT_EQ(tags.ForObject(layout.ObjectIndex(GroupRole::kMoeEp)), WorkspaceKind::kMoe);
}

TEST(WorkspaceTagsTest, AttentionTagWinsWhenOneObjectServesBoth) {
  const ParallelLayout layout = Build(8, 1);  // ATTN_TP, MOE_TP and TP are one object
  const WorkspaceTags tags = TagGroupsForFusedAllReduce(layout, true);
  EXPECT_EQ(tags.ForObject(layout.ObjectIndex(GroupRole::kTp)), WorkspaceKind::kAttnTp);
  EXPECT_EQ(CountTagged(tags, WorkspaceKind::kMoe), 0);
}

// SGLang 0.5.23 (INCONSISTENCY-1 in docs/FIDELITY.md): when EP and MoE-TP
// merge, the MoE workspace rendezvouses on TP but the "moe" tag stays on
// MOE_EP, so the tagged group and the workspace's group differ; the exact
// peer-set check refuses the pairing on every rank.
TEST(WorkspaceTagsTest, MergedHybridTagsTheExpertGroupWhileTheWorkspaceSitsOnTp) {
  const ParallelLayout layout = Build(4, 2);
  EXPECT_EQ(MoeTagRole(layout.widths()), GroupRole::kMoeEp);
  EXPECT_EQ(PostExpertsReductionRole(layout.widths()), GroupRole::kTp);
}

TEST(WorkspaceTagsTest, NothingIsTaggedWithoutAFusedBackend) {
  const ParallelLayout layout = Build(4, 2);
  const WorkspaceTags tags = TagGroupsForFusedAllReduce(layout, false);
  EXPECT_EQ(CountTagged(tags, WorkspaceKind::kNone), static_cast<int>(tags.by_object.size()));
}

}  // namespace
}  // namespace lockstep
