// One dispatched all-reduce's bookkeeping (DispatchAllReduceInto): a host
// reuses one outcome from call to call, so each call must write every field
// afresh; a call after one whose backend raised holds no finding and no
// failed mark, and the same call made into a new outcome
// (DispatchAllReduce) gives the same event and record.

#include "sim/replica/dispatched_call.h"

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "dispatch/group_coordinator.h"
#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

// NCCL that fails its next call when told to.
class FlakyNccl : public NcclBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override {
    if (fail_next) {
      fail_next = false;
      return absl::InternalError("unhandled cuda error");
    }
    return absl::OkStatus();
  }
  bool fail_next = false;
};

class DispatchedCallTest : public ::testing::Test {
 protected:
  DispatchedCallTest() {
    ParallelConfig c;
    c.tp = 4;
    layout_ = *ParallelLayout::Build(c);
    object_ = layout_.ObjectIndex(GroupRole::kTp);
  }
  GroupCoordinator Coordinator() {
    return GroupCoordinator("tp", layout_.GroupOf(GroupRole::kTp, 0), 4, 0, WorkspaceKind::kNone,
                            GroupBackends{nullptr, nullptr, &nccl_}, &policy_);
  }
  bool Dispatch(GroupCoordinator& coordinator, CallOutcome& out, int64_t at) {
    Tensor t{TensorDesc::Matrix(2, 64, DType::kBf16)};
    return DispatchAllReduceInto(out, coordinator, t, CallContext{}, /*rank=*/0,
                                 SiteRef{1, 2, SiteKind::kAttnOut}, object_, layout_,
                                 [at] { return at; });
  }

  ParallelLayout layout_;
  int object_ = 0;
  FlakyNccl nccl_;
  DispatchPolicy policy_;
};

TEST_F(DispatchedCallTest, AnOutcomeReusedAfterARaisedCallHoldsOnlyTheNextCall) {
  GroupCoordinator coordinator = Coordinator();
  CallOutcome out;
  nccl_.fail_next = true;
  ASSERT_TRUE(Dispatch(coordinator, out, 100));
  ASSERT_TRUE(out.raised.has_value());
  EXPECT_EQ(out.raised->verdict, Verdict::kFailStop);
  EXPECT_TRUE(out.event.failed);

  ASSERT_TRUE(Dispatch(coordinator, out, 200));
  EXPECT_FALSE(out.raised.has_value());
  EXPECT_FALSE(out.event.failed);
  EXPECT_EQ(out.event.seq, 1u);
  EXPECT_EQ(out.event.begin_ns, 200);
  EXPECT_EQ(out.event.end_ns, 200);

  // The same second call into an outcome of its own.
  GroupCoordinator again = Coordinator();
  Tensor t{TensorDesc::Matrix(2, 64, DType::kBf16)};
  nccl_.fail_next = true;
  ASSERT_TRUE(DispatchAllReduce(again, t, CallContext{}, 0, SiteRef{1, 2, SiteKind::kAttnOut},
                                object_, layout_, [] { return int64_t{100}; })
                  .has_value());
  const std::optional<CallOutcome> fresh =
      DispatchAllReduce(again, t, CallContext{}, 0, SiteRef{1, 2, SiteKind::kAttnOut}, object_,
                        layout_, [] { return int64_t{200}; });
  ASSERT_TRUE(fresh.has_value());
  EXPECT_FALSE(fresh->raised.has_value());
  EXPECT_TRUE(out.event.SameCallAs(fresh->event));
  EXPECT_EQ(out.event.rank, fresh->event.rank);
  EXPECT_EQ(out.event.begin_ns, fresh->event.begin_ns);
  EXPECT_EQ(out.event.end_ns, fresh->event.end_ns);
  for (const DecisionField& field : DecisionFields()) {
    EXPECT_EQ(field.value(out.record), field.value(fresh->record)) << field.name;
  }
}

TEST_F(DispatchedCallTest, AGroupOfOneRankIsSkipped) {
  GroupCoordinator single("attn_tp", layout_.GroupOf(GroupRole::kAttnCp, 0), 1, 0,
                          WorkspaceKind::kNone, GroupBackends{nullptr, nullptr, &nccl_}, &policy_);
  CallOutcome out;
  EXPECT_FALSE(Dispatch(single, out, 5));
  Tensor t{TensorDesc::Matrix(2, 64, DType::kBf16)};
  EXPECT_FALSE(DispatchAllReduce(single, t, CallContext{}, 0, SiteRef{1, 2, SiteKind::kAttnOut},
                                 object_, layout_, [] { return int64_t{5}; })
                   .has_value());
}

}  // namespace
}  // namespace lockstep
