// The NCCL watchdog of a simulated communicator (SimComm::Complete): when
// the last member joins a call more than the watchdog's budget after another
// did, the member whose deadline passed first (the first to arrive; of two
// that arrived together, the lower) is the one whose watchdog ends the call,
// at that deadline; every other member completes the call when it would
// have.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "sim/memory/data.h"
#include "sim/memory/nccl_comm.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

constexpr int64_t kElems = 64;
constexpr int kMembers = 4;

class CommWatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = lockstep::testing::MakeTp4RunContext("comm-watchdog-unit", /*run_seed=*/1,
                                                /*exact_provenance=*/false);
    ASSERT_NE(run_, nullptr);
    ctx_ = run_->ctx.get();
    budget_ = static_cast<int64_t>(ctx_->scenario.timeouts.watchdog_ms * 1e6);
  }

  // Every member joins one blocking all-reduce at its time in `at`; returns
  // what each member's watchdog reported (TakeExpiry), and leaves each
  // member's clock where the call left it.
  std::vector<std::optional<int64_t>> AllReduceAt(const std::vector<int64_t>& at) {
    SimComm comm(*ctx_, "tp", {0, 1, 2, 3});
    std::vector<SimTensor> in, out(kMembers);
    for (int r = 0; r < kMembers; ++r) in.push_back(MakeInput(*ctx_, r, /*instance=*/1, kElems));
    std::vector<std::optional<int64_t>> expired(kMembers);
    for (int r = 0; r < kMembers; ++r) {
      const auto m = static_cast<size_t>(r);
      ctx_->scheduler.Spawn(
          r,
          [&, r, m] {
            ctx_->AdvanceTo(r, at[m]);
            comm.AllReduce(r, DType::kBf16, in[m], out[m]);
            expired[m] = comm.TakeExpiry(r);
          },
          Fiber::kDefaultStackBytes);
    }
    ctx_->scheduler.Run();
    EXPECT_TRUE(ctx_->scheduler.AllDone());
    return expired;
  }

  std::unique_ptr<lockstep::testing::TestRunContext> run_;
  SimContext* ctx_ = nullptr;
  int64_t budget_ = 0;
};

TEST_F(CommWatchdogTest, TheFirstToArriveOfTwoTogetherTheLowerIsTheOneWhoseWatchdogFires) {
  // Members 1 and 2 arrive first, together; member 3 comes past both of
  // their deadlines, and past member 0's.
  const int64_t t = 1'000'000;
  const std::vector<int64_t> at = {t + 10, t, t, t + 2 * budget_};
  const std::vector<std::optional<int64_t>> expired = AllReduceAt(at);
  EXPECT_EQ(expired[0], std::nullopt);
  ASSERT_TRUE(expired[1].has_value());
  EXPECT_EQ(*expired[1], t + budget_);
  EXPECT_EQ(expired[2], std::nullopt);
  EXPECT_EQ(expired[3], std::nullopt);
  // Member 1's clock stops at its deadline; the others' at the completion,
  // which is after member 3 arrived.
  EXPECT_EQ(ctx_->Clock(1), t + budget_);
  EXPECT_GT(ctx_->Clock(0), at[3]);
  EXPECT_EQ(ctx_->Clock(0), ctx_->Clock(2));
  EXPECT_EQ(ctx_->Clock(0), ctx_->Clock(3));
}

TEST_F(CommWatchdogTest, ALateMemberWithinTheBudgetFiresNoWatchdog) {
  // The last arrives exactly at the first's deadline: not past it.
  const int64_t t = 1'000'000;
  const std::vector<std::optional<int64_t>> expired =
      AllReduceAt({t + budget_, t, t + 5, t + budget_});
  for (int m = 0; m < kMembers; ++m) EXPECT_EQ(expired[static_cast<size_t>(m)], std::nullopt) << m;
  for (int r = 1; r < kMembers; ++r) EXPECT_EQ(ctx_->Clock(r), ctx_->Clock(0)) << r;
  EXPECT_GT(ctx_->Clock(0), t + budget_);
}

}  // namespace
}  // namespace lockstep
