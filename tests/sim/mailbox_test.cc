// The pipeline mailbox (SimMailbox): a receive takes the oldest message from
// its source, whatever was sent to whom in between, and lands at the time
// that message was sent plus its transfer, however long the queue grew (a
// full pipeline's steps wait in it for a stage; the queue drops what was
// received once that is half of it, SimMailbox::Queue::Pop).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "sim/memory/nccl_comm.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

class MailboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = lockstep::testing::MakeTp4RunContext("mailbox-unit", /*run_seed=*/1,
                                                /*exact_provenance=*/false);
    ASSERT_NE(run_, nullptr);
    ctx_ = run_->ctx.get();
  }

  // Rank `from` sends `count` elements at virtual time `at`; returns when
  // the message lands.
  int64_t SendAt(SimMailbox& box, int from, int to, int64_t at, int64_t count) {
    ctx_->AdvanceTo(from, at);
    box.Send(from, to, count);
    return ctx_->Clock(from) + ctx_->hardware.TransferNs(from, to, count * 2);
  }

  std::unique_ptr<lockstep::testing::TestRunContext> run_;
  SimContext* ctx_ = nullptr;
};

TEST_F(MailboxTest, ReceivesInOrderAcrossALongQueue) {
  SimMailbox box(*ctx_, 4);
  std::vector<int64_t> lands;  // of rank 0's messages to rank 1, in order
  int64_t clock = 0;
  int64_t sent = 0, received = 0;
  // Rounds of sends and fewer receives grow the queue past the point where
  // it drops what it received, several times over; rank 2's messages to
  // rank 1 are interleaved and must not be taken for rank 0's.
  for (int round = 0; round < 6; ++round) {
    for (int i = 0; i < 20; ++i) {
      clock += 1000;
      lands.push_back(SendAt(box, 0, 1, clock, 100 + sent++));
      SendAt(box, 2, 1, clock, 7);
    }
    for (int i = 0; i < 13; ++i) {
      std::optional<int64_t> expired;
      const int64_t before = ctx_->Clock(1);
      ASSERT_EQ(box.Recv(1, 0, &expired), 100 + received);
      EXPECT_FALSE(expired.has_value());
      EXPECT_EQ(ctx_->Clock(1), std::max(before, lands[static_cast<size_t>(received)]));
      ++received;
    }
  }
  // The rest, then rank 2's: each queue gives back exactly what was sent.
  while (received < sent) {
    std::optional<int64_t> expired;
    ASSERT_EQ(box.Recv(1, 0, &expired), 100 + received);
    ++received;
  }
  for (int i = 0; i < 120; ++i) {
    std::optional<int64_t> expired;
    ASSERT_EQ(box.Recv(1, 2, &expired), 7);
  }
}

TEST_F(MailboxTest, AMessageLandingPastTheWatchdogEndsTheWaitAtItsDeadline) {
  SimMailbox box(*ctx_, 4);
  const auto budget = static_cast<int64_t>(ctx_->scenario.timeouts.watchdog_ms * 1e6);
  const int64_t lands = SendAt(box, 0, 1, 3 * budget, 64);
  std::optional<int64_t> expired;
  ASSERT_EQ(box.Recv(1, 0, &expired), 64);
  ASSERT_TRUE(expired.has_value());
  EXPECT_EQ(*expired, budget);  // rank 1's clock was 0 when it began to wait
  EXPECT_EQ(ctx_->Clock(1), budget);
  EXPECT_GT(lands, budget);
}

}  // namespace
}  // namespace lockstep
