#include "dispatch/parallel_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;

ParallelConfig Tp(int tp) {
  ParallelConfig c;
  c.tp = tp;
  return c;
}

TEST(ParallelConfigTest, PlainTensorParallelIsValid) {
  EXPECT_TRUE(ValidateParallelConfig(Tp(8)).ok());
}

TEST(ParallelConfigTest, WidthsFollowSglangFormulas) {
  ParallelConfig c = Tp(8);
  c.ep = 2;
  c.attn_dp = 2;
  ASSERT_TRUE(ValidateParallelConfig(c).ok());
  const ParallelWidths w = DeriveWidths(c);
  EXPECT_EQ(w.world, 8);
  EXPECT_EQ(w.attn_dp, 2);
  EXPECT_EQ(w.attn_tp, 4);
  EXPECT_EQ(w.moe_ep, 2);
  EXPECT_EQ(w.moe_tp, 4);
  EXPECT_TRUE(w.IsHybridEpTp());
}

TEST(ParallelConfigTest, PureExpertParallelIsNotHybrid) {
  ParallelConfig c = Tp(8);
  c.ep = 8;
  EXPECT_FALSE(DeriveWidths(c).IsHybridEpTp());
}

TEST(ParallelConfigTest, EpThatDoesNotDivideTpIsRejectedWhereSglangPublishesTheLayout) {
  ParallelConfig c = Tp(6);
  c.ep = 4;
  absl::Status s = ValidateParallelConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("tp=6 is not ep*moe_dp*moe_tp"));
  EXPECT_THAT(s.message(), HasSubstr("only when the scheduler publishes the layout"));
  EXPECT_THAT(s.message(), HasSubstr("Pick an ep that divides tp/moe_dp"));
}

TEST(ParallelConfigTest, WorldOtherThanTpTimesPpIsRejected) {
  ParallelConfig c = Tp(4);
  c.pp = 2;
  c.world = 4;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("world=4 but tp*pp = 4*2 = 8"));
  c.world = 8;
  EXPECT_TRUE(ValidateParallelConfig(c).ok());
}

TEST(ParallelConfigTest, ZeroAndNegativeSizesNameTheKey) {
  ParallelConfig c = Tp(0);
  EXPECT_THAT(ValidateParallelConfig(c).message(),
              HasSubstr("tp must be a positive integer, got 0"));
  c = Tp(4);
  c.ep = -2;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("ep must be a positive integer"));
  c = Tp(4);
  c.world = -1;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("world must be positive"));
}

TEST(ParallelConfigTest, AbsurdSizesAreRejected) {
  ParallelConfig c = Tp(1 << 20);
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("larger than the 65536 ranks"));
  c = Tp(4096);
  c.pp = 4096;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("more than the 65536"));
}

TEST(ParallelConfigTest, DpWithoutAttentionDpIsIndependentReplicasOfOneWorld) {
  ParallelConfig c = Tp(8);
  c.dp = 2;
  ASSERT_TRUE(ValidateParallelConfig(c).ok());
  const ParallelWidths w = DeriveWidths(c);
  EXPECT_EQ(w.world, 8) << "one replica is tp*pp ranks";
  EXPECT_EQ(w.replicas, 2);
  EXPECT_EQ(w.attn_dp, 1);
}

TEST(ParallelConfigTest, DeprecatedDpAttentionMakesDpTheAttentionDpWidth) {
  ParallelConfig c = Tp(8);
  c.dp = 4;
  c.dp_attention = true;
  const ParallelConfig r = c.Resolved();
  EXPECT_EQ(r.attn_dp, 4);
  EXPECT_EQ(r.dp, 1);
  EXPECT_EQ(DeriveWidths(c).attn_tp, 2);
  ParallelConfig both = Tp(8);
  both.dp = 2;
  both.attn_dp = 2;
  EXPECT_THAT(ValidateParallelConfig(both).message(),
              HasSubstr("dp=2 replicas with attn_dp=2; SGLang 0.5.23 refuses it"));
}

TEST(ParallelConfigTest, AttentionDpNeedsTpDivisibleByIt) {
  ParallelConfig c = Tp(8);
  c.attn_dp = 3;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("tp=8 is not divisible by attn_dp=3"));
}

TEST(ParallelConfigTest, MoeDpFollowsServerArgumentRules) {
  ParallelConfig c = Tp(8);
  c.ep = 2;
  c.moe_dp = 2;
  c.attn_cp = 2;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("ep*moe_dp = 2*2 = 4 is not tp=8"));
  c.ep = 4;
  EXPECT_TRUE(ValidateParallelConfig(c).ok());
  c.attn_cp = 1;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("attn_cp=1 differs from moe_dp=2"));
  c.attn_cp = 2;
  c.pp = 2;
  EXPECT_THAT(ValidateParallelConfig(c).message(), HasSubstr("moe_dp=2 with pp=2"));
}

TEST(ParallelConfigTest,
     MoeOnTheTpGroupWithMoeDpEqualToCpUnderAttentionDpFailsAtModelConstruction) {
  ParallelConfig c = Tp(8);
  c.attn_dp = 2;
  c.attn_cp = 2;
  c.moe_dp = 2;
  c.ep = 4;
  ASSERT_TRUE(ValidateParallelConfig(c).ok()) << "accepted on the command line";
  EXPECT_THAT(ValidateMoeModelConstruction(c).message(), HasSubstr("when it builds the model"));
  c.attn_dp = 1;
  EXPECT_TRUE(ValidateMoeModelConstruction(c).ok());
}

TEST(ParallelConfigTest, ShortNameListsNonTrivialDimensions) {
  ParallelConfig c = Tp(8);
  c.ep = 2;
  c.pp = 2;
  EXPECT_EQ(c.ShortName(), "tp8-ep2-pp2");
}

}  // namespace
}  // namespace lockstep
