// Numeric data mode's checks on their own: a correct sum passes against the
// double-precision reference whether that reference reuses the ranks' input
// arrays or regenerates them, and one wrong element or one flipped bit is
// caught (the per-element passes were rewritten for speed; these pin what
// they must still see).

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "sim/memory/data.h"
#include "sim/runtime/context.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

constexpr int kRanks = 4;
constexpr int64_t kElems = 1000;  // not a multiple of the digest's 8-element stride

class NumericDataTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    scenario_ = lockstep::testing::ScenarioFromYaml(std::string(R"(
name: numeric-unit
hardware: h200x8
parallel: {tp: 4}
model: {name: tiny, hidden: 8, layers: 1}
dispatch: {dtype: )") + GetParam() + R"(}
workload: {steps: 1, tokens: [1], data: numeric}
)");
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario_.parallel);
    ASSERT_TRUE(layout.ok()) << layout.status();
    layout_ = std::make_unique<ParallelLayout>(*std::move(layout));
    ctx_ = std::make_unique<SimContext>(scenario_, *layout_, /*run_seed=*/11,
                                        /*exact_provenance=*/false, MakeRandomSchedule(),
                                        /*keep_trace=*/false);
    ASSERT_TRUE(ctx_->numeric_mode);
  }

  // Every rank's input at `instance`, summed in rank order (fp32, as the
  // reduction kernels accumulate).
  SimTensor Sum(uint64_t instance) {
    Accumulator acc;
    acc.fp32 = true;
    for (int r = 0; r < kRanks; ++r) {
      const SimTensor in = MakeInput(*ctx_, r, instance, kElems);
      SimChunk chunk;
      in.runs.Read(0, kElems, chunk);
      AccumulatorAdd(*ctx_, acc, chunk);
    }
    SimTensor out;
    out.elems = kElems;
    WriteChunk(out.runs, 0, AccumulatorFinish(*ctx_, acc), 0, 0);
    return out;
  }

  bool Check(ReductionChecker& checker, int rank, uint64_t instance, const SimTensor& t) {
    return checker.Check(
        *ctx_,
        ReductionCheck{rank, SiteRef{}, instance, expected_, /*group_key=*/1, t.elems, t.origin},
        t);
  }

  // The same tensor with element `e`'s bits replaced.
  static SimTensor WithElement(const SimTensor& t, int64_t e, uint32_t bits) {
    const lockstep::Run& run = t.runs.runs().front();
    auto changed = std::make_shared<std::vector<uint32_t>>(*run.value.numeric);
    (*changed)[static_cast<size_t>(e - run.value.numeric_base)] = bits;
    SimTensor out = t;
    lockstep::Run r = run;
    r.value.numeric = changed;
    out.runs.Reset();
    out.runs.Write(r);
    return out;
  }

  Scenario scenario_;
  std::unique_ptr<ParallelLayout> layout_;
  std::unique_ptr<SimContext> ctx_;
  std::vector<int> expected_{0, 1, 2, 3};
};

TEST_P(NumericDataTest, ACorrectSumPassesWhetherTheReferenceReusesOrRegeneratesInputs) {
  ReductionChecker checker;
  const SimTensor sum = Sum(1);
  // Every rank's latest input is instance 1's: the reference reuses them.
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(Check(checker, r, 1, sum)) << ctx_->finding->summary;
  // Instance 2's sum, checked after every rank made instance 3's input: the
  // reference regenerates instance 2's and must agree with it.
  const SimTensor sum2 = Sum(2);
  for (int r = 0; r < kRanks; ++r) (void)MakeInput(*ctx_, r, 3, kElems);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(Check(checker, r, 2, sum2)) << ctx_->finding->summary;
  }
  EXPECT_FALSE(ctx_->finding.has_value());
}

TEST_P(NumericDataTest, OneWrongElementIsOutsideTheTolerance) {
  ReductionChecker checker;
  const SimTensor sum = Sum(1);
  // Element 997 (in the digest's tail) becomes rank 0's input alone: the
  // other ranks' contributions are missing from it.
  const std::vector<uint32_t> rank0 = NumericInput(*ctx_, 0, 1, kElems);
  const SimTensor wrong = WithElement(sum, 997, rank0[997]);
  EXPECT_FALSE(Check(checker, 0, 1, wrong));
  ASSERT_TRUE(ctx_->finding.has_value());
  EXPECT_EQ(ctx_->finding->detector, Detector::kNumericTolerance);
  EXPECT_NE(ctx_->finding->summary.find("element 997"), std::string::npos)
      << ctx_->finding->summary;
}

TEST_P(NumericDataTest, OneFlippedLowBitBreaksBitwiseAgreement) {
  ReductionChecker checker;
  const SimTensor sum = Sum(1);
  ASSERT_TRUE(Check(checker, 0, 1, sum));
  // Within tolerance, but not the same bits as rank 0's result: element 3
  // (inside the digest's first 8-element block) off by one unit in the last
  // place.
  const uint32_t bits = (*sum.runs.runs().front().value.numeric)[3];
  const SimTensor off = WithElement(sum, 3, bits ^ 1u);
  EXPECT_FALSE(Check(checker, 1, 1, off));
  ASSERT_TRUE(ctx_->finding.has_value());
  EXPECT_EQ(ctx_->finding->detector, Detector::kBitwiseAgreement);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NumericDataTest, ::testing::Values("bf16", "fp16", "fp32"));

}  // namespace
}  // namespace lockstep
