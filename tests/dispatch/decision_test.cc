#include "dispatch/decision.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dispatch/backend.h"
#include "dispatch/fused_launch.h"
#include "dispatch/policy.h"
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
                          Predicate::kDtypeMatches, Predicate::kHiddenAligned));
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

TEST(FusedLaunchTest, TunedCutOverScalesTheBuiltInOneAndDecidesTheAlgorithm) {
  const int64_t built_in = OneShotMaxBytes(8);
  EXPECT_EQ(TunedOneShotMaxBytes(8, FusedTactic{}), built_in);
  EXPECT_EQ(TunedOneShotMaxBytes(8, FusedTactic{0}), built_in / 4);
  EXPECT_EQ(TunedOneShotMaxBytes(8, FusedTactic{2}), built_in * 4);
  // 128 KiB at TP8: one-shot as built, two-shot under the quarter cut-over.
  EXPECT_EQ(SelectFusedAlgorithm(128 << 10, 8, FusedTactic{}), Algorithm::kOneShot);
  EXPECT_EQ(SelectFusedAlgorithm(128 << 10, 8, FusedTactic{0}), Algorithm::kTwoShot);
  EXPECT_EQ(SelectFusedAlgorithm(512 << 10, 8, FusedTactic{2}), Algorithm::kOneShot);
  for (int64_t bytes : {int64_t{1}, built_in, built_in + 1}) {
    EXPECT_EQ(SelectFusedAlgorithm(bytes, 8, FusedTactic{}), SelectFusedAlgorithm(bytes, 8));
  }
}

TEST(FusedLaunchTest, ReferenceTacticIsTheCandidateWhoseSlowestMemberIsFastest) {
  const DispatchPolicy reference;
  // Rank 1's own timings favour candidate 0; its peers' do not.
  const std::vector<std::vector<int64_t>> timings = {
      {200, TunerProfileNs(0, 0), 200}, {100, 100, 100}, {200, 200, 200}};
  const std::vector<int64_t> rank1 = {TunerProfileNs(0, 0), TunerProfileNs(1, 0),
                                      TunerProfileNs(2, 0)};
  EXPECT_EQ(reference.ChooseTactic(timings, rank1).candidate, kBuiltInTactic);
  // Every member slower on the built-in candidate: another wins, on all alike.
  const std::vector<std::vector<int64_t>> slow_table = {{90, 90}, {150, 100}, {90, 120}};
  EXPECT_EQ(reference.ChooseTactic(slow_table, {90, 150, 90}).candidate, 0);  // tie: lowest
  EXPECT_EQ(reference.ChooseTactic(slow_table, {90, 100, 120}).candidate, 0);
}

TEST(SkipDraftTest, ReferenceSkipsFromTheSchedulersLengthOnly) {
  const DispatchPolicy reference;
  RankLocalState ahead;
  ahead.context_len_skew = 5;
  EXPECT_FALSE(reference.SkipDraft(DraftStep{1001, 3, 1004}, RankLocalState{}));
  EXPECT_FALSE(reference.SkipDraft(DraftStep{1001, 3, 1004}, ahead));
  EXPECT_TRUE(reference.SkipDraft(DraftStep{1002, 3, 1004}, RankLocalState{}));
  EXPECT_FALSE(reference.SkipDraft(DraftStep{1 << 20, 3, 0}, ahead));  // no limit
}

TEST(FusedLaunchTest, GridSizeIsBoundedAndMonotone) {
  EXPECT_EQ(FusedGridBlocks(0), 1);
  EXPECT_EQ(FusedGridBlocks(kFusedBytesPerBlock), 1);
  EXPECT_EQ(FusedGridBlocks(kFusedBytesPerBlock + 1), 2);
  EXPECT_EQ(FusedGridBlocks(int64_t{1} << 40), kFusedMaxBlocks);
}

// Every field of DecisionFields(), changed alone: reports name it, and the
// fingerprint moves exactly when the field is fingerprinted. The list of
// perturbations must cover every field: a field added without one fails here.
TEST(DecisionFieldsTest, EveryFieldThatChangesIsNamedAndFingerprintedFieldsMoveTheFingerprint) {
  const DecisionRecord base = Decide(true, 8);
  std::map<std::string, std::function<void(DecisionRecord&)>> perturb = {
      {"seq", [](DecisionRecord& r) { r.seq += 1; }},
      {"group", [](DecisionRecord& r) { r.group = GroupId{r.group.value + 1}; }},
      {"backend", [](DecisionRecord& r) { r.backend = BackendKind::kCustom; }},
      {"graph_inputs", [](DecisionRecord& r) { r.graph_inputs = true; }},
      {"algorithm", [](DecisionRecord& r) { r.algorithm = Algorithm::kTwoShot; }},
      {"blocks", [](DecisionRecord& r) { r.blocks += 1; }},
      {"fp32_acc", [](DecisionRecord& r) { r.fp32_acc = !r.fp32_acc; }},
      {"kernel_flags", [](DecisionRecord& r) { r.kernel_flags ^= kVerifyClear; }},
      {"ndim", [](DecisionRecord& r) { r.call.tensor.ndim = 3; }},
      {"tokens", [](DecisionRecord& r) { r.call.tensor.dims[0] += 1; }},
      {"hidden", [](DecisionRecord& r) { r.call.tensor.dims[1] += 8; }},
      {"dtype", [](DecisionRecord& r) { r.call.tensor.dtype = DType::kFp16; }},
      {"tensor_contiguous", [](DecisionRecord& r) { r.call.tensor.contiguous = false; }},
      {"norm_fused", [](DecisionRecord& r) { r.norm_fused = !r.norm_fused; }},
      {"workspace_peers",
       [](DecisionRecord& r) { r.workspace_group = GroupId{r.workspace_group.value + 1}; }},
      {"workspace_generation", [](DecisionRecord& r) { r.workspace_generation += 1; }},
      {"max_tokens", [](DecisionRecord& r) { r.workspace_capacity.max_tokens += 1; }},
      {"workspace_hidden", [](DecisionRecord& r) { r.workspace_capacity.hidden += 8; }},
      {"workspace_dtype", [](DecisionRecord& r) { r.workspace_capacity.dtype = DType::kFp32; }},
      {"tracing", [](DecisionRecord& r) { r.call.context.tracing = true; }},
      {"graph_capture", [](DecisionRecord& r) { r.call.context.graph_capture = true; }},
  };
  for (int p = 0; p < kNumPredicates; ++p) {
    perturb[std::string(PredicateName(static_cast<Predicate>(p)))] = [p](DecisionRecord& r) {
      const auto pred = static_cast<Predicate>(p);
      r.Check(pred, !(r.Evaluated(pred) && r.Held(pred)));
    };
  }
  ASSERT_EQ(perturb.size(), DecisionFields().size());
  for (const DecisionField& field : DecisionFields()) {
    SCOPED_TRACE(std::string(field.name));
    auto it = perturb.find(std::string(field.name));
    ASSERT_NE(it, perturb.end()) << "no perturbation for a field";
    DecisionRecord changed = base;
    it->second(changed);
    ASSERT_NE(field.value(changed), field.value(base)) << "the perturbation changes nothing";
    const std::vector<std::string> named = DescribeDifferences(changed, base);
    EXPECT_FALSE(named.empty());
    EXPECT_EQ(DecisionFingerprint(changed) != DecisionFingerprint(base), field.fingerprinted);
  }
}

TEST(DecisionFieldsTest, DifferingFingerprintsAreNeverExplainedByNothing) {
  DecisionRecord a = Decide(true, 8);
  DecisionRecord b = a;
  b.workspace_capacity.hidden = 4096;  // fingerprinted, and no predicate differs
  ASSERT_NE(DecisionFingerprint(a), DecisionFingerprint(b));
  EXPECT_THAT(DescribeDifferences(a, b), ElementsAre("workspace_hidden=8192"));
}

}  // namespace
}  // namespace lockstep
