#include "dispatch/group_coordinator.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

using ::testing::_;
using ::testing::Return;

class MockFused : public FusedAllReduceBackend {
 public:
  MOCK_METHOD(absl::Status, AllReduce, (Tensor&, const DecisionRecord&), (override));
};
class MockCustom : public CustomAllReduceBackend {
 public:
  MOCK_METHOD(absl::Status, AllReduce, (Tensor&, const DecisionRecord&), (override));
};
class MockNccl : public NcclBackend {
 public:
  MOCK_METHOD(absl::Status, AllReduce, (Tensor&, const DecisionRecord&), (override));
};

// Rank 0 of a tp4 group with an attention workspace bound to it.
class GroupCoordinatorTest : public ::testing::Test {
 protected:
  GroupCoordinatorTest() {
    ParallelConfig c;
    c.tp = 4;
    layout_ = *ParallelLayout::Build(c);
    group_ = layout_.GroupOf(GroupRole::kTp, 0);
    workspace_ = {WorkspaceKind::kAttnTp, group_, 4, {128, 8192, DType::kBf16}, true, 0};
    fused_.set_agreed({true, &workspace_, group_, 4});
    custom_.set_agreed({true, 8 << 20, 4, true, true});
  }

  GroupCoordinator Coordinator() {
    return GroupCoordinator("tp", group_, 4, 0, WorkspaceKind::kAttnTp,
                            GroupBackends{&fused_, &custom_, &nccl_}, &policy_);
  }

  ParallelLayout layout_;
  GroupId group_;
  Workspace workspace_;
  MockFused fused_;
  MockCustom custom_;
  MockNccl nccl_;
  DispatchPolicy policy_;
};

TEST_F(GroupCoordinatorTest, FittingCallGoesToTheFusedKernel) {
  EXPECT_CALL(fused_, AllReduce(_, _)).WillOnce(Return(absl::OkStatus()));
  EXPECT_CALL(custom_, AllReduce(_, _)).Times(0);
  EXPECT_CALL(nccl_, AllReduce(_, _)).Times(0);
  GroupCoordinator coordinator = Coordinator();
  Tensor t{TensorDesc::Matrix(8, 8192, DType::kBf16)};
  DecisionRecord record;
  ASSERT_TRUE(coordinator.AllReduce(t, &record).ok());
  EXPECT_EQ(record.backend, BackendKind::kFused);
  EXPECT_EQ(record.algorithm, Algorithm::kOneShot);
  EXPECT_EQ(record.seq, 0u);
  EXPECT_EQ(coordinator.calls(), 1u);
}

TEST_F(GroupCoordinatorTest, OverCapacityCallFallsBackToCustomThenNccl) {
  EXPECT_CALL(fused_, AllReduce(_, _)).Times(0);
  EXPECT_CALL(custom_, AllReduce(_, _)).WillOnce(Return(absl::OkStatus()));
  EXPECT_CALL(nccl_, AllReduce(_, _)).WillOnce(Return(absl::OkStatus()));
  GroupCoordinator coordinator = Coordinator();
  Tensor mid{TensorDesc::Matrix(256, 8192, DType::kBf16)};  // 4 MiB: custom
  DecisionRecord record;
  ASSERT_TRUE(coordinator.AllReduce(mid, &record).ok());
  EXPECT_EQ(record.backend, BackendKind::kCustom);
  EXPECT_EQ(FirstFailedPredicate(record, BackendKind::kFused), Predicate::kTokensFit);
  Tensor big{TensorDesc::Matrix(1024, 8192, DType::kBf16)};  // 16 MiB: NCCL
  ASSERT_TRUE(coordinator.AllReduce(big, &record).ok());
  EXPECT_EQ(record.backend, BackendKind::kNccl);
  EXPECT_EQ(record.seq, 1u);
}

TEST_F(GroupCoordinatorTest, FusedKernelErrorIsReturnedAndNoOtherBackendRuns) {
  EXPECT_CALL(fused_, AllReduce(_, _))
      .WillOnce(Return(absl::InternalError("illegal address in fused kernel")));
  EXPECT_CALL(custom_, AllReduce(_, _)).Times(0);
  EXPECT_CALL(nccl_, AllReduce(_, _)).Times(0);
  GroupCoordinator coordinator = Coordinator();
  Tensor t{TensorDesc::Matrix(8, 8192, DType::kBf16)};
  absl::Status s = coordinator.AllReduce(t);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "illegal address in fused kernel");
}

TEST_F(GroupCoordinatorTest, CustomErrorIsNotFollowedByNccl) {
  EXPECT_CALL(custom_, AllReduce(_, _)).WillOnce(Return(absl::UnavailableError("peer lost")));
  EXPECT_CALL(nccl_, AllReduce(_, _)).Times(0);
  GroupCoordinator coordinator = Coordinator();
  Tensor t{TensorDesc::Matrix(256, 8192, DType::kBf16)};
  EXPECT_EQ(coordinator.AllReduce(t).code(), absl::StatusCode::kUnavailable);
}

TEST_F(GroupCoordinatorTest, SingleRankGroupSkipsTheReduction) {
  EXPECT_CALL(nccl_, AllReduce(_, _)).Times(0);
  GroupCoordinator coordinator("attn_tp", layout_.GroupOf(GroupRole::kAttnCp, 0), 1, 0,
                               WorkspaceKind::kNone, GroupBackends{nullptr, nullptr, &nccl_},
                               &policy_);
  Tensor t{TensorDesc::Matrix(8, 8192, DType::kBf16)};
  DecisionRecord record;
  ASSERT_TRUE(coordinator.AllReduce(t, &record).ok());
  EXPECT_EQ(record.backend, BackendKind::kSkip);
}

TEST_F(GroupCoordinatorTest, UntaggedGroupRecordsWhyTheFusedKernelWasSkipped) {
  EXPECT_CALL(custom_, AllReduce(_, _)).WillOnce(Return(absl::OkStatus()));
  GroupCoordinator coordinator("tp", group_, 4, 0, WorkspaceKind::kNone,
                               GroupBackends{nullptr, &custom_, &nccl_}, &policy_);
  Tensor t{TensorDesc::Matrix(8, 8192, DType::kBf16)};
  DecisionRecord record;
  ASSERT_TRUE(coordinator.AllReduce(t, &record).ok());
  EXPECT_EQ(FirstFailedPredicate(record, BackendKind::kFused), Predicate::kGroupTagged);
}

TEST_F(GroupCoordinatorTest, ContextIsRecorded) {
  EXPECT_CALL(fused_, AllReduce(_, _)).WillOnce(Return(absl::OkStatus()));
  GroupCoordinator coordinator = Coordinator();
  Tensor t{TensorDesc::Matrix(8, 8192, DType::kBf16)};
  DecisionRecord record;
  ASSERT_TRUE(coordinator.AllReduce(t, &record, CallContext{.tracing = true}).ok());
  EXPECT_TRUE(record.call.context.tracing);
}

// A record decided into once more holds nothing of the call before: every
// field is what a record never used holds after the same call.
TEST_F(GroupCoordinatorTest, ARecordDecidedIntoAgainHoldsOnlyTheNewCall) {
  EXPECT_CALL(fused_, AllReduce(_, _)).WillRepeatedly(Return(absl::OkStatus()));
  EXPECT_CALL(custom_, AllReduce(_, _)).WillRepeatedly(Return(absl::OkStatus()));
  GroupCoordinator reused_coordinator = Coordinator();
  GroupCoordinator fresh_coordinator = Coordinator();
  Tensor mid{TensorDesc::Matrix(256, 8192, DType::kBf16)};  // custom, fused refused
  Tensor small{TensorDesc::Matrix(8, 8192, DType::kBf16)};  // fused
  DecisionRecord reused;
  DecisionRecord scratch;
  ASSERT_TRUE(reused_coordinator.AllReduce(mid, &reused, CallContext{.tracing = true}).ok());
  ASSERT_TRUE(fresh_coordinator.AllReduce(mid, &scratch).ok());
  ASSERT_EQ(reused.backend, BackendKind::kCustom);
  ASSERT_NE(reused.evaluated, 0u);
  ASSERT_TRUE(reused_coordinator.AllReduce(small, &reused).ok());
  DecisionRecord fresh;
  ASSERT_TRUE(fresh_coordinator.AllReduce(small, &fresh).ok());
  EXPECT_EQ(reused.backend, BackendKind::kFused);
  EXPECT_EQ(reused.seq, fresh.seq);
  EXPECT_EQ(reused.group_world_size, fresh.group_world_size);
  for (const DecisionField& field : DecisionFields()) {
    EXPECT_EQ(field.value(reused), field.value(fresh)) << field.name;
  }
}

class RefuseHook : public CallHook {
 public:
  absl::Status BeforeExecute(const DecisionRecord& record, CommBackend& chosen) override {
    seen_backend = chosen.kind();
    seen_seq = record.seq;
    return absl::AbortedError("the group's members decided differently");
  }
  BackendKind seen_backend = BackendKind::kSkip;
  uint64_t seen_seq = 99;
};

TEST_F(GroupCoordinatorTest, CallHookSeesTheDecisionAndItsErrorStopsTheCall) {
  EXPECT_CALL(fused_, AllReduce(_, _)).Times(0);
  EXPECT_CALL(custom_, AllReduce(_, _)).Times(0);
  EXPECT_CALL(nccl_, AllReduce(_, _)).Times(0);
  GroupCoordinator coordinator = Coordinator();
  RefuseHook hook;
  coordinator.set_call_hook(&hook);
  Tensor t{TensorDesc::Matrix(8, 8192, DType::kBf16)};
  DecisionRecord record;
  const absl::Status s = coordinator.AllReduce(t, &record);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(hook.seen_backend, BackendKind::kFused);
  EXPECT_EQ(hook.seen_seq, 0u);
  EXPECT_EQ(record.backend, BackendKind::kFused);
}

TEST(PolicyRegistryTest, CreatesTheReferenceAndNamesTheKnownPoliciesOnATypo) {
  PolicyRegistry registry;
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> reference = registry.Create("reference");
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ((*reference)->name(), "reference");
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> typo = registry.Create("refrence");
  EXPECT_EQ(typo.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(typo.status().message(), ::testing::HasSubstr("known policies: reference"));
  EXPECT_EQ(registry.Register({"reference", "", "", nullptr}).code(),
            absl::StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace lockstep
