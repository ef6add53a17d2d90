#include "dispatch/group_layout.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Groups = std::vector<std::vector<int>>;

ParallelConfig Config(int tp, int ep = 1) {
  ParallelConfig c;
  c.tp = tp;
  c.ep = ep;
  return c;
}

ParallelLayout Build(const ParallelConfig& c) {
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(c);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *std::move(layout);
}

// The subgroups of the object serving `role`, as rank lists.
Groups Subgroups(const ParallelLayout& layout, GroupRole role) {
  Groups out;
  for (GroupId id : layout.Object(role).members) {
    auto peers = layout.Peers(id);
    out.emplace_back(peers.begin(), peers.end());
  }
  return out;
}

Groups Singletons(int n) {
  Groups out;
  for (int r = 0; r < n; ++r) out.push_back({r});
  return out;
}

TEST(GroupLayoutTest, Tp8HasOneTpGroupServingAttentionAndMoeTp) {
  const ParallelLayout layout = Build(Config(8));
  EXPECT_EQ(Subgroups(layout, GroupRole::kTp), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(layout.ObjectIndex(GroupRole::kAttnTp), layout.ObjectIndex(GroupRole::kTp));
  EXPECT_EQ(layout.ObjectIndex(GroupRole::kMoeTp), layout.ObjectIndex(GroupRole::kTp));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeEp), Singletons(8));
  EXPECT_EQ(Subgroups(layout, GroupRole::kPp), Singletons(8));
}

TEST(GroupLayoutTest, HybridEpTpMoeGroupsHaveSameSizeButDifferentPeers) {
  const ParallelLayout layout = Build(Config(4, 2));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeTp), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeEp), (Groups{{0, 2}, {1, 3}}));
  for (int rank = 0; rank < 4; ++rank) {
    const GroupId ep = layout.GroupOf(GroupRole::kMoeEp, rank);
    const GroupId mt = layout.GroupOf(GroupRole::kMoeTp, rank);
    EXPECT_EQ(layout.GroupSize(ep), layout.GroupSize(mt));
    EXPECT_NE(ep, mt) << "rank " << rank;
  }
}

TEST(GroupLayoutTest, Tp8Ep2) {
  const ParallelLayout layout = Build(Config(8, 2));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeTp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeEp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(GroupLayoutTest, Tp8Ep4) {
  const ParallelLayout layout = Build(Config(8, 4));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeTp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeEp), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(GroupLayoutTest, Tp8Ep8ReusesTpAsTheExpertGroup) {
  const ParallelLayout layout = Build(Config(8, 8));
  EXPECT_EQ(layout.ObjectIndex(GroupRole::kMoeEp), layout.ObjectIndex(GroupRole::kTp));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeTp), Singletons(8));
  EXPECT_THAT(layout.Object(GroupRole::kTp).roles,
              ElementsAre(GroupRole::kTp, GroupRole::kAttnTp, GroupRole::kMoeEp));
}

TEST(GroupLayoutTest, DpAttentionDp8GivesSingleRankAttentionGroups) {
  ParallelConfig c = Config(8);
  c.dp = 8;
  c.dp_attention = true;
  const ParallelLayout layout = Build(c);
  EXPECT_EQ(layout.widths().attn_tp, 1);
  EXPECT_NE(layout.ObjectIndex(GroupRole::kAttnTp), layout.ObjectIndex(GroupRole::kTp));
  EXPECT_EQ(Subgroups(layout, GroupRole::kAttnTp), Singletons(8));
  EXPECT_EQ(Subgroups(layout, GroupRole::kTp), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
}

TEST(GroupLayoutTest, DpAttentionDp2SplitsTpInTwo) {
  ParallelConfig c = Config(8);
  c.dp = 2;
  c.dp_attention = true;
  const ParallelLayout layout = Build(c);
  EXPECT_EQ(Subgroups(layout, GroupRole::kAttnTp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeTp), (Groups{{0, 1, 2, 3, 4, 5, 6, 7}}));
}

TEST(GroupLayoutTest, Tp4Pp2NumbersRanksPpMajor) {
  ParallelConfig c = Config(4);
  c.pp = 2;
  const ParallelLayout layout = Build(c);
  EXPECT_EQ(layout.world_size(), 8);
  EXPECT_EQ(Subgroups(layout, GroupRole::kTp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kPp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(GroupLayoutTest, HybridWithPipelineKeepsGroupsInsideEachStage) {
  ParallelConfig c = Config(4, 2);
  c.pp = 2;
  const ParallelLayout layout = Build(c);
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeEp), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeTp), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
}

TEST(GroupLayoutTest, MoeDpGroupsStrideOverEpTimesMoeTp) {
  ParallelConfig c = Config(8, 4);
  c.moe_dp = 2;
  c.attn_cp = 2;
  const ParallelLayout layout = Build(c);
  EXPECT_EQ(layout.widths().moe_tp, 1);
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeEp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeDp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kAttnCp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(Subgroups(layout, GroupRole::kAttnTp), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // Same members, same identity.
  EXPECT_EQ(layout.GroupOf(GroupRole::kMoeDp, 1), layout.GroupOf(GroupRole::kAttnCp, 1));
}

TEST(GroupLayoutTest, MoeDpIsTheAttentionCpObjectWhenCpIsWider) {
  ParallelConfig c = Config(8);
  c.attn_cp = 2;
  const ParallelLayout layout = Build(c);
  EXPECT_EQ(layout.ObjectIndex(GroupRole::kMoeDp), layout.ObjectIndex(GroupRole::kAttnCp));
  EXPECT_EQ(Subgroups(layout, GroupRole::kMoeDp), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(GroupLayoutTest, EveryRoleCoversEveryRankExactlyOnce) {
  ParallelConfig c = Config(8, 2);
  c.pp = 2;
  c.dp = 2;
  c.dp_attention = true;
  const ParallelLayout layout = Build(c);
  for (GroupRole role : kAllGroupRoles) {
    std::vector<int> seen(16, 0);
    for (GroupId id : layout.Object(role).members) {
      for (int r : layout.Peers(id)) ++seen[static_cast<size_t>(r)];
    }
    EXPECT_THAT(seen, ::testing::Each(1)) << GroupRoleName(role);
    for (int r = 0; r < 16; ++r) {
      EXPECT_GE(layout.RankInGroup(layout.GroupOf(role, r), r), 0);
    }
  }
}

TEST(GroupLayoutTest, InterningGivesEqualIdsForEqualPeerSetsOnly) {
  ParallelLayout layout = Build(Config(4, 2));
  absl::StatusOr<GroupId> ep = layout.Intern(std::vector<int>{0, 2});
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ(*ep, layout.GroupOf(GroupRole::kMoeEp, 0));
  absl::StatusOr<GroupId> reversed = layout.Intern(std::vector<int>{2, 0});
  ASSERT_TRUE(reversed.ok());
  EXPECT_NE(*reversed, *ep) << "identity is the ordered peer set";
  EXPECT_THAT(layout.Intern(std::vector<int>{0, 9}).status().message(),
              HasSubstr("outside the world of 4 ranks"));
  EXPECT_THAT(layout.Intern(std::vector<int>{1, 1}).status().message(), HasSubstr("twice"));
}

TEST(GroupLayoutTest, BuildsAWorldOf4096Ranks) {
  ParallelConfig c = Config(512, 8);
  c.pp = 8;
  const ParallelLayout layout = Build(c);
  EXPECT_EQ(layout.world_size(), 4096);
  EXPECT_EQ(layout.GroupSize(layout.GroupOf(GroupRole::kMoeTp, 4095)), 64);
}

TEST(GroupLayoutTest, BuildRejectsInvalidConfigs) {
  EXPECT_FALSE(ParallelLayout::Build(Config(6, 4)).ok());
}

}  // namespace
}  // namespace lockstep
