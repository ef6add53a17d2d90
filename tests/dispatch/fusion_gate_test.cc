#include "dispatch/fusion_gate.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

ParallelWidths Widths(int tp, int ep, int moe_dp = 1, int attn_cp = 1) {
  ParallelConfig c;
  c.tp = tp;
  c.ep = ep;
  c.moe_dp = moe_dp;
  c.attn_cp = attn_cp;
  EXPECT_TRUE(ValidateParallelConfig(c).ok());
  return DeriveWidths(c);
}

FusionGateInputs DecodeStep() {
  FusionGateInputs in;
  in.tokens = 4;
  in.max_fused_tokens = 128;
  return in;
}

TEST(FusionGateTest, HybridEpTpRefusesFusion) {
  EXPECT_FALSE(ShouldFuseMlpAllReduceWithNextLayer(Widths(4, 2), DecodeStep()));
  EXPECT_FALSE(ShouldFuseMlpAllReduceWithNextLayer(Widths(8, 2), DecodeStep()));
  EXPECT_EQ(FusionGateRefusal(Widths(8, 4), DecodeStep()),
            "hybrid EP+TP (moe_ep > 1 and moe_tp > 1)");
}

TEST(FusionGateTest, PureTpStillFuses) {
  EXPECT_TRUE(ShouldFuseMlpAllReduceWithNextLayer(Widths(8, 1), DecodeStep()));
}

TEST(FusionGateTest, PureEpStillFuses) {
  EXPECT_TRUE(ShouldFuseMlpAllReduceWithNextLayer(Widths(8, 8), DecodeStep()));
}

TEST(FusionGateTest, OtherGuardsStillApply) {
  FusionGateInputs in = DecodeStep();
  in.model_supports_ar_norm_fusion = false;  // DeepSeek-V4 (mHC)
  EXPECT_FALSE(ShouldFuseMlpAllReduceWithNextLayer(Widths(8, 1), in));
  in = DecodeStep();
  in.tokens = 129;
  EXPECT_FALSE(ShouldFuseMlpAllReduceWithNextLayer(Widths(8, 1), in));
  in = DecodeStep();
  in.fused_backend_enabled = false;
  EXPECT_FALSE(ShouldFuseMlpAllReduceWithNextLayer(Widths(8, 1), in));
}

TEST(PostExpertsPlanTest, HybridWithoutMoeDpMergesIntoOneTpReduction) {
  const PostExpertsPlan plan = PlanPostExpertsReduction(Widths(4, 2), false);
  EXPECT_TRUE(plan.merged);
  EXPECT_THAT(plan.reductions, ElementsAre(GroupRole::kTp));
}

TEST(PostExpertsPlanTest, PureLayoutsReduceOverTheirOneMoeGroup) {
  EXPECT_THAT(PlanPostExpertsReduction(Widths(8, 8), false).reductions,
              ElementsAre(GroupRole::kMoeEp));
  EXPECT_THAT(PlanPostExpertsReduction(Widths(8, 1), false).reductions,
              ElementsAre(GroupRole::kMoeTp));
}

TEST(PostExpertsPlanTest, MoeDpReducesOverExpertsOnly) {
  // tp8 ep4 moe_dp2: moe_tp = 1, so only the EP reduction remains.
  const PostExpertsPlan plan = PlanPostExpertsReduction(Widths(8, 4, 2, 2), false);
  EXPECT_FALSE(plan.merged);
  EXPECT_THAT(plan.reductions, ElementsAre(GroupRole::kMoeEp));
}

TEST(PostExpertsPlanTest, FusedPlanReducesOverTheSingleMoeGroup) {
  PostExpertsPlan plan = PlanPostExpertsReduction(Widths(8, 8), true);
  EXPECT_TRUE(plan.fused_into_next_layer);
  EXPECT_EQ(plan.fused_group, GroupRole::kMoeEp);
  EXPECT_THAT(plan.reductions, IsEmpty());
  plan = PlanPostExpertsReduction(Widths(8, 1), true);
  EXPECT_EQ(plan.fused_group, GroupRole::kMoeTp);
}

TEST(PostExpertsPlanTest, DescribesItself) {
  EXPECT_EQ(PlanPostExpertsReduction(Widths(4, 2), false).ToString(),
            "all-reduce over tp (EP and MoE-TP merged)");
  EXPECT_EQ(PlanPostExpertsReduction(Widths(8, 8), true).ToString(),
            "fused into the next layer's AR+norm over moe_ep");
}

}  // namespace
}  // namespace lockstep
