// Numeric data mode's checks on their own: a correct sum passes against the
// double-precision reference whether that reference reuses the ranks' input
// arrays or regenerates them, and one wrong element or one flipped bit is
// caught (the per-element passes were rewritten for speed; these pin what
// they must still see). Each runs on every element (`data: numeric`) and on
// a sample of them (`data: sampled`, 8 in every 64), whose index arithmetic
// NumericSamplerTest pins against counting element by element.

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "sim/memory/data.h"
#include "sim/memory/sim_context.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

constexpr int kRanks = 4;
constexpr int64_t kElems = 1000;  // not a multiple of the digest's 8-element stride

TEST(NumericSamplerTest, RanksCountAndWalksTheKeptElementsAsCountingDoes) {
  for (const NumericSampler sampler :
       {NumericSampler{}, NumericSampler{3, 8}, NumericSampler{6, 8}, NumericSampler{10, 8}}) {
    SCOPED_TRACE(::testing::Message() << "stride " << sampler.stride());
    auto kept = [&](int64_t e) { return sampler.all() || e % sampler.stride() < sampler.block; };
    int64_t rank = 0;
    for (int64_t e = 0; e < 3000; ++e) {
      ASSERT_EQ(sampler.Rank(e), rank) << e;
      if (kept(e)) {
        ASSERT_EQ(sampler.Unrank(rank), e);
        ++rank;
      }
    }
    for (const auto& [a, b] : {std::pair<int64_t, int64_t>{0, 3000}, {5, 9}, {13, 700}, {64, 64}}) {
      std::vector<int64_t> walked;
      sampler.ForEachKept(a, b, [&](int64_t lo, int64_t hi) {
        for (int64_t e = lo; e < hi; ++e) walked.push_back(e);
      });
      std::vector<int64_t> expected;
      for (int64_t e = a; e < b; ++e) {
        if (kept(e)) expected.push_back(e);
      }
      EXPECT_EQ(walked, expected) << a << ".." << b;
      EXPECT_EQ(sampler.Count(a, b), static_cast<int64_t>(expected.size()));
    }
    EXPECT_TRUE(sampler.Aligned(sampler.stride() * 3));
    EXPECT_EQ(sampler.Aligned(5), sampler.all());
  }
}

TEST(NumericSamplerTest, SampledDataKeepsEightOrMoreElementsOfEveryRow) {
  Scenario s;
  s.workload.data = DataMode::kSampled;
  for (const auto& [hidden, stride] : {std::pair<int64_t, int64_t>{8192, 8192},
                                       {7168, 4096},
                                       {16384, 8192},
                                       {1000, 512},
                                       {8, 8}}) {
    s.model.hidden = hidden;
    const NumericSampler sampler = SamplerFor(s);
    EXPECT_EQ(sampler.stride(), stride) << "hidden " << hidden;
    EXPECT_GE(sampler.Count(hidden * 5 + 3, hidden * 6 + 3), 8);
  }
  s.workload.sample_stride = 64;
  EXPECT_EQ(SamplerFor(s).stride(), 64);
  s.workload.data = DataMode::kNumeric;
  EXPECT_TRUE(SamplerFor(s).all());
}

TEST(NumericInputTest, SampledInputsHoldTheFullInputsKeptElements) {
  // The kept elements of a sampled input are made by one loop over the kept
  // elements, those of a full one element by element: both must give element
  // e the same bits, for a whole input and for a range of one (the rows a
  // gather buffer holds).
  constexpr int64_t kLong = 20000;
  for (const char* dtype : {"fp32", "bf16", "fp16"}) {
    for (const char* stride : {"16", "64", "8192"}) {
      SCOPED_TRACE(::testing::Message() << dtype << ", sample_stride " << stride);
      auto context = [&](const std::string& data) {
        return lockstep::testing::MakeTestRunContext(std::string(R"(
name: numeric-input-unit
hardware: h200x8
parallel: {tp: 4}
model: {name: tiny, hidden: 8192, layers: 1}
dispatch: {dtype: )") + dtype + R"(}
workload: {steps: 1, tokens: [1], data: )" + data + R"(}
)",
                                                     /*run_seed=*/11, /*exact_provenance=*/false);
      };
      const auto full_run = context("numeric");
      const auto sampled_run = context(std::string("sampled, sample_stride: ") + stride);
      ASSERT_NE(full_run, nullptr);
      ASSERT_NE(sampled_run, nullptr);
      SimContext* full = full_run->ctx.get();
      SimContext* sampled = sampled_run->ctx.get();
      const NumericSampler& sampler = sampled->sampler;
      ASSERT_FALSE(sampler.all());
      for (int rank : {0, 3}) {
        const std::vector<uint32_t> all = NumericInput(*full, rank, 7, kLong);
        const std::vector<uint32_t> kept = NumericInput(*sampled, rank, 7, kLong);
        ASSERT_EQ(kept.size(), static_cast<size_t>(sampler.Count(0, kLong)));
        for (size_t k = 0; k < kept.size(); ++k) {
          ASSERT_EQ(kept[k], all[static_cast<size_t>(sampler.Unrank(static_cast<int64_t>(k)))])
              << "kept element " << k;
        }
        // Elements [5003, 12000) only.
        const SimTensor range = MakeInputRange(*sampled, rank, 7, kLong, 5003, 12000 - 5003);
        const lockstep::Run* rows = nullptr;
        for (const lockstep::Run& run : range.runs.runs()) {
          if (run.value.numeric != nullptr) rows = &run;
        }
        ASSERT_NE(rows, nullptr);
        const std::vector<uint32_t>& bits = rows->value.numeric->bits;
        ASSERT_EQ(bits.size(), static_cast<size_t>(sampler.Count(5003, 12000)));
        const int64_t r0 = sampler.Rank(5003);
        for (size_t j = 0; j < bits.size(); ++j) {
          ASSERT_EQ(bits[j], all[static_cast<size_t>(sampler.Unrank(r0 + static_cast<int64_t>(j)))])
              << "kept element " << r0 + static_cast<int64_t>(j);
        }
      }
    }
  }
}

// (dtype, data mode)
class NumericDataTest : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {
 protected:
  void SetUp() override {
    const auto [dtype, data] = GetParam();
    sampled_ = std::string(data) == "sampled";
    run_ = lockstep::testing::MakeTestRunContext(std::string(R"(
name: numeric-unit
hardware: h200x8
parallel: {tp: 4}
model: {name: tiny, hidden: 64, layers: 1}
dispatch: {dtype: )") + dtype + R"(}
workload: {steps: 1, tokens: [1], data: )" + data + (sampled_ ? ", sample_stride: 64" : "") +
                                                     R"(}
)",
                                                 /*run_seed=*/11, /*exact_provenance=*/false);
    ASSERT_NE(run_, nullptr);
    ctx_ = run_->ctx.get();
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

  // The same tensor with element `e`'s bits (a kept element) replaced.
  SimTensor WithElement(const SimTensor& t, int64_t e, uint32_t bits) const {
    const lockstep::Run& run = t.runs.runs().front();
    auto changed = std::make_shared<NumericBits>(*run.value.numeric);
    changed->bits[static_cast<size_t>(ctx_->sampler.Rank(e - run.value.numeric_base) -
                                      changed->first)] = bits;
    SimTensor out = t;
    lockstep::Run r = run;
    r.value.numeric = changed;
    out.runs.Reset();
    out.runs.Write(r);
    return out;
  }

  bool sampled_ = false;
  std::unique_ptr<lockstep::testing::TestRunContext> run_;
  SimContext* ctx_ = nullptr;
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
  // The last kept element before 998 (997, in the digest's tail; sampled:
  // 967) becomes rank 0's input alone: the other ranks' contributions are
  // missing from it.
  const int64_t e = ctx_->sampler.Unrank(ctx_->sampler.Rank(998) - 1);
  EXPECT_EQ(e, sampled_ ? 967 : 997);
  const std::vector<uint32_t> rank0 = NumericInput(*ctx_, 0, 1, kElems);
  const SimTensor wrong = WithElement(sum, e, rank0[static_cast<size_t>(ctx_->sampler.Rank(e))]);
  EXPECT_FALSE(Check(checker, 0, 1, wrong));
  ASSERT_TRUE(ctx_->finding.has_value());
  EXPECT_EQ(ctx_->finding->detector, Detector::kNumericTolerance);
  EXPECT_NE(ctx_->finding->summary.find(absl::StrFormat("element %d =", e)), std::string::npos)
      << ctx_->finding->summary;
}

TEST_P(NumericDataTest, OneFlippedLowBitBreaksBitwiseAgreement) {
  ReductionChecker checker;
  const SimTensor sum = Sum(1);
  ASSERT_TRUE(Check(checker, 0, 1, sum));
  // Within tolerance, but not the same bits as rank 0's result: element 3
  // (inside the digest's first 8-element block) off by one unit in the last
  // place.
  const uint32_t bits = sum.runs.runs().front().value.numeric->bits[3];
  const SimTensor off = WithElement(sum, 3, bits ^ 1u);
  EXPECT_FALSE(Check(checker, 1, 1, off));
  ASSERT_TRUE(ctx_->finding.has_value());
  EXPECT_EQ(ctx_->finding->detector, Detector::kBitwiseAgreement);
}

// A tensor holding rank 0's elements from 3 on where its elements from 0 on
// belong (a slice read at the wrong offset, though its coordinates agree):
// numeric data compares place by place and finds other values; sampled data
// keeps none of the same places and says the data belongs to other offsets.
TEST_P(NumericDataTest, DataOfOtherOffsetsIsCaught) {
  ReductionChecker checker;
  const SimTensor longer = MakeInput(*ctx_, 0, 1, kElems + 3);
  const SimTensor moved = SliceElements(longer, 3, kElems);
  const std::vector<int> only_rank0 = {0};
  EXPECT_FALSE(checker.Check(
      *ctx_, ReductionCheck{0, SiteRef{}, 1, only_rank0, /*group_key=*/2, kElems, /*origin=*/0},
      moved));
  ASSERT_TRUE(ctx_->finding.has_value());
  EXPECT_EQ(ctx_->finding->detector,
            sampled_ ? Detector::kMessageLayout : Detector::kNumericTolerance)
      << ctx_->finding->summary;
}

// An injected −0 and negative subnormal land on kept elements (the range's
// first and middle kept ones; on every element, its first and element
// n / 2), so the value says it carries them, as it does on every element;
// also where the range's middle element is not kept and no kept element
// follows it inside the range (one 64-element row at 960).
TEST_P(NumericDataTest, InjectedElementClassesAreCarried) {
  struct Place {
    int64_t first, elems, zero_at, subnormal_at;
  };
  // [100, 400) keeps 40 elements (stride 64): 128..135, 192..199, 256..263,
  // 320..327, 384..391; the 21st is 260.
  const Place places[] = {sampled_ ? Place{100, 300, 128, 260} : Place{100, 300, 100, 250},
                          sampled_ ? Place{960, 40, 960, 964} : Place{960, 40, 960, 980}};
  for (const Place& p : places) {
    const InputInjection injected{kHasNegZero | kHasNegSubnormal, p.first, p.elems};
    const SimTensor in = MakeInput(*ctx_, 2, 1, kElems, injected);
    ASSERT_EQ(in.runs.runs().size(), 1u);
    const SimValue& v = in.runs.runs().front().value;
    EXPECT_EQ(v.flags & (kHasNegZero | kHasNegSubnormal), kHasNegZero | kHasNegSubnormal)
        << p.first;
    const std::vector<uint32_t> bits = NumericInput(*ctx_, 2, 1, kElems, injected);
    EXPECT_EQ(bits, v.numeric->bits) << "the reference regenerates what the rank sent";
    const auto elem = static_cast<protocol::Elem>(run_->scenario.dispatch.dtype);
    EXPECT_EQ(bits[static_cast<size_t>(ctx_->sampler.Rank(p.zero_at))], protocol::NegZeroBits(elem))
        << p.first;
    EXPECT_TRUE(protocol::IsSubnormalBits(
        bits[static_cast<size_t>(ctx_->sampler.Rank(p.subnormal_at))], elem))
        << p.first;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, NumericDataTest,
                         ::testing::Combine(::testing::Values("bf16", "fp16", "fp32"),
                                            ::testing::Values("numeric", "sampled")),
                         [](const ::testing::TestParamInfo<NumericDataTest::ParamType>& param) {
                           return std::string(std::get<0>(param.param)) + "_" +
                                  std::get<1>(param.param);
                         });

}  // namespace
}  // namespace lockstep
