// A group's run-ahead all-reduce (SimComm::Post, FinishPost): the first
// member to post a sequence is its slot's lead, whose trace event and check
// stand for every member whose own are the same but for the rank; a member
// whose event or check differs keeps its own, and an input that is not one
// run over the whole tensor is kept as a tensor and summed by the general
// path. Whichever way a member's call is held, the trace and the checks must
// be what the member posted.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sim/memory/data.h"
#include "sim/memory/nccl_comm.h"
#include "sim/replica/trace.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

constexpr int64_t kElems = 64;
constexpr int kMembers = 4;

class PostedCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = lockstep::testing::MakeTp4RunContext("posted-calls-unit", /*run_seed=*/1,
                                                /*exact_provenance=*/true);
    ASSERT_NE(run_, nullptr);
    ctx_ = std::make_unique<SimContext>(run_->scenario, *run_->layout, /*run_seed=*/1,
                                        /*exact_provenance=*/true, MakeRandomSchedule(),
                                        /*keep_trace=*/true);
    ctx_->streams.assign(static_cast<size_t>(kMembers), SimContext::Stream{});
    comm_ = std::make_unique<SimComm>(*ctx_, "tp", std::vector<int>{0, 1, 2, 3});
    checker_ = std::make_unique<ReductionChecker>();
  }

  // The event member `m` records for step `step`'s call.
  static TraceEvent EventOf(int m, int step) {
    TraceEvent e;
    e.rank = m;
    e.site = SiteRef{step, 0, SiteKind::kAttnOut};
    e.group = GroupId{7};
    e.backend = BackendKind::kNccl;
    e.tokens = 1;
    e.seq = static_cast<uint64_t>(step);
    return e;
  }

  // Member `m` posts `in` at virtual time `at`, recording `event` and
  // checking its result against `expected`'s contributions.
  void PostAs(int m, int64_t at, SimTensor in, const TraceEvent& event,
              const std::vector<int>& expected) {
    ctx_->AdvanceTo(m, at);
    comm_->Post(m, DType::kBf16, in);
    const ReductionCheck check{m,
                               event.site,
                               event.site.Instance(),
                               expected,
                               /*group_key=*/1,
                               kElems,
                               0,
                               0};
    comm_->FinishPost(event, checker_.get(), check, nullptr);
  }

  SimTensor Input(int contributor, int step) {
    return MakeInput(*ctx_, contributor, EventOf(0, step).site.Instance(), kElems);
  }

  // `in` (one run) as two: [0, 32) and [32, 64), the same data.
  static SimTensor InTwoRuns(SimTensor in) {
    lockstep::Run second = in.runs.runs()[0];
    second.begin = kElems / 2;
    second.src += kElems / 2;
    in.runs.Write(second);
    return in;
  }

  // The trace's events of ranks 0..3, in the order they were recorded.
  std::vector<TraceEvent> Events() const { return ctx_->trace.events(); }

  std::unique_ptr<lockstep::testing::TestRunContext> run_;
  std::unique_ptr<SimContext> ctx_;
  std::unique_ptr<SimComm> comm_;
  std::unique_ptr<ReductionChecker> checker_;
  const std::vector<int> all_ = {0, 1, 2, 3};
};

TEST_F(PostedCallsTest, MembersShareTheLeadsEventAndCheckAndKeepTheirRanksAndTimes) {
  // The lead is member 2, the first to post; the events are recorded in
  // member order, each with its member's rank and arrival.
  const int order[] = {2, 0, 3, 1};
  const int64_t at[] = {100, 400, 300, 200};  // by member
  for (int m : order) PostAs(m, at[m], Input(m, 0), EventOf(m, 0), all_);
  ASSERT_FALSE(ctx_->finding.has_value()) << ctx_->finding->summary;
  const std::vector<TraceEvent> events = Events();
  ASSERT_EQ(events.size(), 4u);
  for (int m = 0; m < kMembers; ++m) {
    SCOPED_TRACE(m);
    const TraceEvent& e = events[static_cast<size_t>(m)];
    EXPECT_EQ(e.rank, m);
    EXPECT_EQ(e.begin_ns, at[m]);
    EXPECT_EQ(e.end_ns, events[0].end_ns);
    EXPECT_GT(e.end_ns, 400);
    EXPECT_TRUE(e.SameCallAs(EventOf(m, 0)));
    EXPECT_EQ(ctx_->streams[static_cast<size_t>(m)].pending, 0);
  }
}

TEST_F(PostedCallsTest, AMemberWhoseEventDiffersKeepsItsOwn) {
  TraceEvent odd = EventOf(3, 0);
  odd.blocks = 7;
  odd.algorithm = Algorithm::kOneShot;
  for (int m = 0; m < kMembers; ++m) {
    PostAs(m, 10, Input(m, 0), m == 3 ? odd : EventOf(m, 0), all_);
  }
  ASSERT_FALSE(ctx_->finding.has_value()) << ctx_->finding->summary;
  const std::vector<TraceEvent> events = Events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[3].blocks, 7);
  EXPECT_EQ(events[3].algorithm, Algorithm::kOneShot);
  for (int m = 0; m < 3; ++m) {
    EXPECT_EQ(events[static_cast<size_t>(m)].blocks, 0) << m;
    EXPECT_EQ(events[static_cast<size_t>(m)].algorithm, Algorithm::kNone) << m;
  }
  // The next sequence's slot starts again from its own lead.
  for (int m = 0; m < kMembers; ++m) PostAs(m, 20, Input(m, 1), EventOf(m, 1), all_);
  ASSERT_EQ(Events().size(), 8u);
  EXPECT_EQ(Events()[7].blocks, 0);
}

// Member 2 expects rank 3's contribution to be missing: its check, not the
// lead's, decides, whether it is the lead or not.
TEST_F(PostedCallsTest, AMemberWhoseCheckDiffersIsCheckedAgainstItsOwn) {
  const std::vector<int> without_3 = {0, 1, 2};
  for (const bool odd_is_lead : {false, true}) {
    SCOPED_TRACE(odd_is_lead ? "member 2 leads" : "member 0 leads");
    SetUp();
    const int order[] = {odd_is_lead ? 2 : 0, 1, odd_is_lead ? 0 : 2, 3};
    for (int m : order) {
      PostAs(m, 10, Input(m, 0), EventOf(m, 0), m == 2 ? without_3 : all_);
    }
    ASSERT_TRUE(ctx_->finding.has_value());
    EXPECT_EQ(ctx_->finding->verdict, Verdict::kWrongPeer) << ctx_->finding->summary;
    EXPECT_EQ(ctx_->finding->rank, 2) << ctx_->finding->summary;
  }
}

// One member's input in two runs: the slot is summed by the general path,
// for which the other members' whole inputs are made tensors again; the sum
// is every member's contribution and bitwise what the whole inputs give
// (a second group's call of the same instance, checked by the same checker
// under the same key, must agree with it).
TEST_F(PostedCallsTest, AnInputOfTwoRunsIsSummedWithTheOthersWholeInputs) {
  for (int m = 0; m < kMembers; ++m) PostAs(m, 10, Input(m, 0), EventOf(m, 0), all_);
  ASSERT_FALSE(ctx_->finding.has_value()) << ctx_->finding->summary;

  comm_ = std::make_unique<SimComm>(*ctx_, "tp-again", std::vector<int>{0, 1, 2, 3});
  SimTensor halves = InTwoRuns(Input(1, 0));
  ASSERT_EQ(halves.runs.runs().size(), 2u);
  for (int m = 0; m < kMembers; ++m) {
    PostAs(m, 20, m == 1 ? std::move(halves) : Input(m, 0), EventOf(m, 0), all_);
  }
  EXPECT_FALSE(ctx_->finding.has_value()) << ctx_->finding->summary;
  EXPECT_EQ(Events().size(), 8u);

  // And the general path still sees a wrong input: member 3 posts rank 1's.
  SetUp();
  halves = InTwoRuns(Input(1, 0));
  for (int m = 0; m < kMembers; ++m) {
    PostAs(m, 10, m == 1 ? std::move(halves) : Input(m == 3 ? 1 : m, 0), EventOf(m, 0), all_);
  }
  ASSERT_TRUE(ctx_->finding.has_value());
  EXPECT_EQ(ctx_->finding->verdict, Verdict::kWrongPeer) << ctx_->finding->summary;
}

}  // namespace
}  // namespace lockstep
