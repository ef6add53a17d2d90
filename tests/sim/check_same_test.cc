// ReductionChecker::CheckSame: `times` members' results that hold the same
// runs, checked as `times` Checks would check them. When they are every
// member the check expects and none of them was checked before, it checks
// the contributions alone and keeps nothing; when some member was checked
// before (an agreement is open), the rest are compared with its output.

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "sim/memory/data.h"
#include "sim/memory/value.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

constexpr int64_t kElems = 64;
constexpr uint64_t kInstance = 9;

class CheckSameTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = lockstep::testing::MakeTp4RunContext("check-same-unit", /*run_seed=*/1,
                                                /*exact_provenance=*/false);
    ASSERT_NE(run_, nullptr);
    ctx_ = run_->ctx.get();
  }

  // A reduction's result: the contributions of `ranks` at kInstance, with
  // `bits` as how they were summed.
  static SimTensor Sum(const std::vector<int>& ranks, uint64_t bits) {
    SimValue v;
    for (int r : ranks) v.key_sum += ContributionKey(r, kInstance);
    v.count = static_cast<uint32_t>(ranks.size());
    v.bits = bits;
    SimTensor t;
    t.elems = kElems;
    t.runs.Write(lockstep::Run{0, kElems, v, 0, 0, 0});
    return t;
  }
  // Member `rank`'s check of the group of four.
  ReductionCheck CheckOf(int rank) const {
    return ReductionCheck{rank,
                          SiteRef{0, 0, SiteKind::kAttnOut},
                          kInstance,
                          all_,
                          /*group_key=*/1,
                          kElems,
                          0,
                          0};
  }

  std::unique_ptr<lockstep::testing::TestRunContext> run_;
  SimContext* ctx_ = nullptr;
  ReductionChecker checker_;
  const std::vector<int> all_ = {0, 1, 2, 3};
};

TEST_F(CheckSameTest, EveryMemberAtOnceIsCheckedForItsContributions) {
  EXPECT_FALSE(checker_.CheckSame(*ctx_, CheckOf(0), Sum({0, 1, 2}, 1), 4));
  ASSERT_TRUE(ctx_->finding.has_value());
  EXPECT_EQ(ctx_->finding->verdict, Verdict::kWrongPeer) << ctx_->finding->summary;
  EXPECT_EQ(ctx_->finding->rank, 0);
}

TEST_F(CheckSameTest, EveryMemberAtOnceLeavesNoAgreementOpen) {
  EXPECT_TRUE(checker_.CheckSame(*ctx_, CheckOf(0), Sum(all_, 1), 4));
  // The next check of the same call opens an agreement of its own: its
  // output is not compared with the one before.
  EXPECT_TRUE(checker_.Check(*ctx_, CheckOf(0), Sum(all_, 2)));
  EXPECT_TRUE(checker_.CheckSame(*ctx_, CheckOf(1), Sum(all_, 2), 3));
  EXPECT_FALSE(ctx_->finding.has_value()) << ctx_->finding->summary;
}

// As many as the group (4) after one: still compared with the one before,
// not checked as a call of their own.
TEST_F(CheckSameTest, MembersAfterOneCheckedBeforeAreComparedWithIt) {
  for (const uint32_t times : {3u, 4u}) {
    SCOPED_TRACE(times);
    SetUp();
    checker_ = ReductionChecker();
    EXPECT_TRUE(checker_.Check(*ctx_, CheckOf(0), Sum(all_, 1)));
    EXPECT_FALSE(checker_.CheckSame(*ctx_, CheckOf(1), Sum(all_, 2), times));
    ASSERT_TRUE(ctx_->finding.has_value());
    EXPECT_EQ(ctx_->finding->verdict, Verdict::kDivergence) << ctx_->finding->summary;
    EXPECT_EQ(ctx_->finding->rank, 1);
  }
}

TEST_F(CheckSameTest, MembersAfterOneCheckedBeforeCloseItsAgreement) {
  EXPECT_TRUE(checker_.Check(*ctx_, CheckOf(0), Sum(all_, 1)));
  EXPECT_TRUE(checker_.CheckSame(*ctx_, CheckOf(1), Sum(all_, 1), 3));
  // Closed: four more checks, of other bits, are a call of their own.
  EXPECT_TRUE(checker_.CheckSame(*ctx_, CheckOf(0), Sum(all_, 5), 4));
  EXPECT_FALSE(ctx_->finding.has_value()) << ctx_->finding->summary;
}

}  // namespace
}  // namespace lockstep
