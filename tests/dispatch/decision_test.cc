#include "dispatch/decision.h"

#include "dispatch/backend.h"
#include "dispatch/fused_launch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

DecisionRecord Decide(bool initialized, int64_t tokens) {
  static const ParallelLayout layout = [] {
    ParallelConfig c;
    c.tp = 4;
    return *ParallelLayout::Build(c);
  }();
  static Workspace workspace;
  workspace = {WorkspaceKind::kAttnTp,
               layout.GroupOf(GroupRole::kTp, 0),
               4,
               {128, 8192, DType::kBf16},
               initialized,
               0};
  DecisionRecord r;
  r.group = workspace.group;
  r.group_world_size = 4;
  r.call.tensor = TensorDesc::Matrix(tokens, 8192, DType::kBf16);
  FusedAgreedState s{true, &workspace, workspace.group, 4};
  r.backend = FusedPredicatesHold(s, r.call, r) ? BackendKind::kFused : BackendKind::kNccl;
  return r;
}

TEST(DecisionRecordTest, ExplainsTheRefusingPredicateByName) {
  const DecisionRecord r = Decide(false, 8);
  EXPECT_EQ(ExplainDecision(r), "nccl (fused refused: workspace_initialized=false)");
  EXPECT_EQ(DescribePredicate(r, Predicate::kTokensFit), "tokens_fit not evaluated");
}

TEST(DecisionRecordTest, DescribesComparisonInputs) {
  const DecisionRecord r = Decide(true, 300);
  EXPECT_EQ(DescribePredicate(r, Predicate::kTokensFit),
            "tokens_fit=false (tokens 300, max_tokens 128)");
}

TEST(DecisionRecordTest, DifferingPredicatesFindTheDivergentInput) {
  const DecisionRecord a = Decide(true, 8);
  const DecisionRecord b = Decide(false, 8);
  EXPECT_THAT(DifferingPredicates(a, b),
              ElementsAre(Predicate::kWorkspaceInitialized, Predicate::kWorkspaceWorldSize,
                          Predicate::kWorkspacePeers, Predicate::kTokensFit, Predicate::kHiddenFits,
                          Predicate::kDtypeMatches));
  EXPECT_THAT(DifferingPredicates(a, a), ::testing::IsEmpty());
}

TEST(DecisionRecordTest, FingerprintIsEqualForEqualDecisionsAndDiffersOtherwise) {
  EXPECT_EQ(DecisionFingerprint(Decide(true, 8)), DecisionFingerprint(Decide(true, 8)));
  EXPECT_NE(DecisionFingerprint(Decide(true, 8)), DecisionFingerprint(Decide(false, 8)));
  EXPECT_NE(DecisionFingerprint(Decide(true, 8)), DecisionFingerprint(Decide(true, 9)));
}

TEST(DecisionRecordTest, NamesEveryPredicateDistinctly) {
  std::set<std::string_view> names;
  for (int i = 0; i < kNumPredicates; ++i) names.insert(PredicateName(static_cast<Predicate>(i)));
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumPredicates));
  EXPECT_EQ(names.count("?"), 0u);
}

TEST(FusedLaunchTest, AlgorithmDependsOnlyOnBytesAndWorldSize) {
  EXPECT_EQ(SelectFusedAlgorithm(64 << 10, 8), Algorithm::kOneShot);
  EXPECT_EQ(SelectFusedAlgorithm(OneShotMaxBytes(8), 8), Algorithm::kOneShot);
  EXPECT_EQ(SelectFusedAlgorithm(OneShotMaxBytes(8) + 1, 8), Algorithm::kTwoShot);
  EXPECT_GE(OneShotMaxBytes(2), OneShotMaxBytes(4));
  EXPECT_GE(OneShotMaxBytes(4), OneShotMaxBytes(8));
}

TEST(FusedLaunchTest, GridSizeIsBoundedAndMonotone) {
  EXPECT_EQ(FusedGridBlocks(0), 1);
  EXPECT_EQ(FusedGridBlocks(kFusedBytesPerBlock), 1);
  EXPECT_EQ(FusedGridBlocks(kFusedBytesPerBlock + 1), 2);
  EXPECT_EQ(FusedGridBlocks(int64_t{1} << 40), kFusedMaxBlocks);
}

}  // namespace
}  // namespace lockstep
