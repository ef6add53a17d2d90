// The shortcuts symbolic data takes through a sum: an add of one piece over
// the whole chunk into a sum of one segment (AccumulatorAdd), and an NCCL
// all-reduce whose inputs are each one run (SimComm::AllReduceWholeInputs).
// Each must give the value the piece-by-piece path gives for the same
// contributions, fingerprint, digest and flags alike: the trace hashes and
// verdicts of every catalogue scenario rest on it (tests/golden). The
// piece-by-piece path is reached here by cutting one input in two pieces of
// the same value, which it sums segment by segment.

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/memory/data.h"
#include "sim/memory/nccl_comm.h"
#include "sim/memory/sim_context.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

constexpr int kRanks = 4;
constexpr int64_t kElems = 64;

// Equal values; their contributor sets (exact mode) are compared by content:
// each merge interns a set of its own.
void ExpectSameValue(const SimContext& ctx, const SimValue& got, const SimValue& want) {
  EXPECT_EQ(got.key_sum, want.key_sum);
  EXPECT_EQ(got.count, want.count);
  const std::span<const Contribution> a = ctx.sets.Get(got.exact);
  const std::span<const Contribution> b = ctx.sets.Get(want.exact);
  EXPECT_EQ(std::vector<Contribution>(a.begin(), a.end()),
            std::vector<Contribution>(b.begin(), b.end()));
  EXPECT_EQ(got.bits, want.bits);
  EXPECT_EQ(got.flags, want.flags);
}

// Exact provenance (contributor sets interned) or fingerprints only.
class ProvenanceSumTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    run_ = lockstep::testing::MakeTp4RunContext("provenance-sum-unit", /*run_seed=*/5,
                                                /*exact_provenance=*/GetParam());
    ASSERT_NE(run_, nullptr);
    ctx_ = run_->ctx.get();
    ASSERT_FALSE(ctx_->numeric_mode);
  }

  // Rank r's input, one run; `src` moves it in its value's index space (data
  // for other offsets, as ranks that disagree on a layout leave).
  SimTensor Input(int r, int64_t src = 0) {
    SimTensor t = MakeInput(*ctx_, r, /*instance=*/3, kElems);
    if (src != 0) {
      lockstep::Run run = t.runs.runs().front();
      run.src = src;
      t.runs.Reset();
      t.runs.Write(run);
    }
    return t;
  }
  // The same input as two runs of its value, cut at element `at`.
  static SimTensor Cut(const SimTensor& whole, int64_t at) {
    const lockstep::Run& run = whole.runs.runs().front();
    SimTensor t;
    t.elems = whole.elems;
    lockstep::Run left = run;
    left.end = at;
    lockstep::Run right = run;
    right.begin = at;
    right.src = run.src + at;
    t.runs.Write(left);
    t.runs.Write(right);
    return t;
  }

  std::unique_ptr<lockstep::testing::TestRunContext> run_;
  SimContext* ctx_ = nullptr;
};

TEST_P(ProvenanceSumTest, AWholePieceAddsAsThePieceByPieceLoopDoes) {
  for (const bool fp32 : {false, true}) {
    for (const int64_t shifted_src : {int64_t{0}, int64_t{5}}) {
      SCOPED_TRACE(::testing::Message()
                   << "fp32 " << fp32 << ", last input at src " << shifted_src);
      // Every add of `whole` takes the shortcut; `cut` starts with two
      // segments, so every add after its first takes the loop.
      Accumulator whole, cut;
      whole.fp32 = cut.fp32 = fp32;
      for (int r = 0; r < kRanks; ++r) {
        const SimTensor in = Input(r, r == kRanks - 1 ? shifted_src : 0);
        SimChunk chunk;
        ASSERT_TRUE(in.runs.Read(0, kElems, chunk));
        AccumulatorAdd(*ctx_, whole, chunk);
        SimChunk pieces;
        ASSERT_TRUE((r == 0 ? Cut(in, kElems / 2) : in).runs.Read(0, kElems, pieces));
        AccumulatorAdd(*ctx_, cut, pieces);
      }
      const SimChunk a = AccumulatorFinish(*ctx_, whole);
      const SimChunk b = AccumulatorFinish(*ctx_, cut);
      ASSERT_EQ(a.pieces.size(), 1u);
      ASSERT_EQ(b.pieces.size(), 2u);
      for (const Piece& p : b.pieces) ExpectSameValue(*ctx_, p.value, a.pieces[0].value);
      EXPECT_EQ(a.pieces[0].value.count, static_cast<uint32_t>(kRanks));
      if (GetParam()) {
        EXPECT_EQ(ctx_->sets.Get(a.pieces[0].value.exact).size(), size_t{kRanks});
      }
      EXPECT_EQ((a.pieces[0].value.flags & kShifted) != 0, shifted_src != 0);
      EXPECT_EQ(a.pieces[0].src, 0);
      EXPECT_EQ(b.pieces[1].src, kElems / 2);
    }
  }
}

TEST_P(ProvenanceSumTest, AnAllReduceOfWholeInputsEqualsOneOfCutInputs) {
  // Rank 3's input sits at another offset in both runs: the sum is marked.
  std::vector<SimTensor> whole_in, cut_in;
  for (int r = 0; r < kRanks; ++r) {
    whole_in.push_back(Input(r, r == 3 ? 7 : 0));
    cut_in.push_back(r == 1 ? Cut(whole_in.back(), 24) : whole_in.back());
  }
  std::vector<SimTensor> whole_out(kRanks), cut_out(kRanks);
  SimComm whole_comm(*ctx_, "whole", {0, 1, 2, 3});
  SimComm cut_comm(*ctx_, "cut", {0, 1, 2, 3});
  for (int r = 0; r < kRanks; ++r) {
    ctx_->scheduler.Spawn(
        r,
        [&, r] {
          whole_comm.AllReduce(r, DType::kBf16, whole_in[static_cast<size_t>(r)],
                               whole_out[static_cast<size_t>(r)]);
          cut_comm.AllReduce(r, DType::kBf16, cut_in[static_cast<size_t>(r)],
                             cut_out[static_cast<size_t>(r)]);
        },
        Fiber::kDefaultStackBytes);
  }
  ctx_->scheduler.Run();
  ASSERT_TRUE(ctx_->scheduler.AllDone());
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE(::testing::Message() << "rank " << r);
    const RunList::Runs& a = whole_out[static_cast<size_t>(r)].runs.runs();
    const RunList::Runs& b = cut_out[static_cast<size_t>(r)].runs.runs();
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_EQ(whole_out[static_cast<size_t>(r)].elems, kElems);
    EXPECT_EQ(a[0].begin, 0);
    EXPECT_EQ(a[0].end, kElems);
    EXPECT_EQ(a[0].src, 0);
    EXPECT_EQ(a[0].writer, r);
    EXPECT_EQ(b[1].src, 24);
    for (const lockstep::Run& run : b) ExpectSameValue(*ctx_, run.value, a[0].value);
    EXPECT_EQ(a[0].value.count, static_cast<uint32_t>(kRanks));
    if (GetParam()) {
      EXPECT_EQ(ctx_->sets.Get(a[0].value.exact).size(), size_t{kRanks});
    }
    EXPECT_NE(a[0].value.flags & kShifted, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Provenance, ProvenanceSumTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return std::string(param.param ? "Exact" : "Fingerprint");
                         });

}  // namespace
}  // namespace lockstep
