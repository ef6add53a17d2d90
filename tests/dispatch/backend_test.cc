#include "dispatch/backend.h"

#include "gtest/gtest.h"

namespace lockstep {
namespace {

// A tp4·ep2 layout with an MoE workspace rendezvoused on rank 0's EP group
// [0,2]; calls come from rank 0's groups.
class FusedPredicatesTest : public ::testing::Test {
 protected:
  FusedPredicatesTest() {
    ParallelConfig c;
    c.tp = 4;
    c.ep = 2;
    layout_ = *ParallelLayout::Build(c);
    ep_group_ = layout_.GroupOf(GroupRole::kMoeEp, 0);
    moe_tp_group_ = layout_.GroupOf(GroupRole::kMoeTp, 0);
    workspace_.kind = WorkspaceKind::kMoe;
    workspace_.group = ep_group_;
    workspace_.world_size = 2;
    workspace_.capacity = {256, 7168, DType::kBf16};
    workspace_.initialized = true;
    state_.library_available = true;
    state_.workspace = &workspace_;
    state_.group = ep_group_;
    state_.group_world_size = 2;
  }

  bool CanUse(const TensorDesc& t) {
    record_ = DecisionRecord{};
    CallDesc call;
    call.tensor = t;
    return FusedPredicatesHold(state_, call, record_);
  }

  ParallelLayout layout_;
  GroupId ep_group_, moe_tp_group_;
  Workspace workspace_;
  FusedAgreedState state_;
  DecisionRecord record_;
};

TEST_F(FusedPredicatesTest, AcceptsAFittingTwoDimensionalCallOnTheBoundGroup) {
  EXPECT_TRUE(CanUse(TensorDesc::Matrix(16, 7168, DType::kBf16)));
  EXPECT_TRUE(record_.Held(Predicate::kDtypeMatches));
}

TEST_F(FusedPredicatesTest, RefusesThreeDimensionalTensors) {
  TensorDesc t = TensorDesc::Matrix(4, 16, DType::kBf16);
  t.ndim = 3;
  t.dims = {4, 16, 7168, 0};
  EXPECT_FALSE(CanUse(t));
  EXPECT_FALSE(record_.Held(Predicate::kTwoDimensional));
}

TEST_F(FusedPredicatesTest, RefusesNonContiguousTensors) {
  TensorDesc t = TensorDesc::Matrix(16, 7168, DType::kBf16);
  t.contiguous = false;
  EXPECT_FALSE(CanUse(t));
  EXPECT_FALSE(record_.Held(Predicate::kContiguous));
}

TEST_F(FusedPredicatesTest, RefusesAnUninitialisedWorkspaceBeforeReadingItsCapacity) {
  workspace_.initialized = false;
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(16, 7168, DType::kBf16)));
  EXPECT_FALSE(record_.Held(Predicate::kWorkspaceInitialized));
  EXPECT_FALSE(record_.Evaluated(Predicate::kTokensFit));
}

TEST_F(FusedPredicatesTest, RefusesAnUntaggedGroup) {
  state_.workspace = nullptr;
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(16, 7168, DType::kBf16)));
  EXPECT_FALSE(record_.Held(Predicate::kGroupTagged));
}

TEST_F(FusedPredicatesTest, RefusesAWorkspaceOfAnEqualSizeGroupWithOtherPeers) {
  // MoE-TP call [0,1] on the workspace bound to EP [0,2]: same size, other peers.
  state_.group = moe_tp_group_;
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(16, 7168, DType::kBf16)));
  EXPECT_TRUE(record_.Held(Predicate::kWorkspaceWorldSize));
  EXPECT_FALSE(record_.Held(Predicate::kWorkspacePeers));
}

TEST_F(FusedPredicatesTest, RefusesAWorkspaceOfAnotherSize) {
  state_.group = layout_.GroupOf(GroupRole::kTp, 0);
  state_.group_world_size = 4;
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(16, 7168, DType::kBf16)));
  EXPECT_FALSE(record_.Held(Predicate::kWorkspaceWorldSize));
}

TEST_F(FusedPredicatesTest, RefusesMoreTokensThanTheWorkspaceHolds) {
  EXPECT_TRUE(CanUse(TensorDesc::Matrix(256, 7168, DType::kBf16)));
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(257, 7168, DType::kBf16)));
  EXPECT_FALSE(record_.Held(Predicate::kTokensFit));
}

TEST_F(FusedPredicatesTest, RefusesAWiderHiddenSize) {
  EXPECT_TRUE(CanUse(TensorDesc::Matrix(8, 2048, DType::kBf16)));
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(8, 8192, DType::kBf16)));
  EXPECT_FALSE(record_.Held(Predicate::kHiddenFits));
}

TEST_F(FusedPredicatesTest, RefusesAnotherDtype) {
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(8, 7168, DType::kFp32)));
  EXPECT_FALSE(record_.Held(Predicate::kDtypeMatches));
}

TEST_F(FusedPredicatesTest, RefusesWhenTheLibraryIsUnavailable) {
  state_.library_available = false;
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(8, 7168, DType::kBf16)));
  EXPECT_FALSE(record_.Held(Predicate::kLibraryAvailable));
}

TEST_F(FusedPredicatesTest, CapacityIsCheckedLast) {
  // A call that fails both the peer check and capacity is refused by the peer
  // check; the capacity predicates are never evaluated.
  state_.group = moe_tp_group_;
  EXPECT_FALSE(CanUse(TensorDesc::Matrix(100000, 7168, DType::kBf16)));
  EXPECT_FALSE(record_.Evaluated(Predicate::kTokensFit));
  EXPECT_FALSE(record_.Evaluated(Predicate::kHiddenFits));
  EXPECT_FALSE(record_.Evaluated(Predicate::kDtypeMatches));
}

TEST(CustomPredicatesTest, FollowTheCustomAllReduceRules) {
  CustomAgreedState s{.available = true,
                      .max_bytes = 8 << 20,
                      .group_world_size = 4,
                      .full_nvlink = true,
                      .same_node = true};
  DecisionRecord r;
  CallDesc call;
  call.tensor = TensorDesc::Matrix(16, 7168, DType::kBf16);
  EXPECT_TRUE(CustomPredicatesHold(s, call, r));

  call.tensor = TensorDesc::Matrix(1, 7, DType::kBf16);  // 14 bytes
  r = {};
  EXPECT_FALSE(CustomPredicatesHold(s, call, r));
  EXPECT_FALSE(r.Held(Predicate::kBytesAligned));

  call.tensor = TensorDesc::Matrix(1024, 8192, DType::kBf16);  // 16 MiB
  r = {};
  EXPECT_FALSE(CustomPredicatesHold(s, call, r));
  EXPECT_FALSE(r.Held(Predicate::kBytesBelowMax));

  call.tensor = TensorDesc::Matrix(16, 7168, DType::kBf16);
  s.group_world_size = 3;
  r = {};
  EXPECT_FALSE(CustomPredicatesHold(s, call, r));
  EXPECT_FALSE(r.Held(Predicate::kCustomWorldSize));

  s.group_world_size = 4;
  s.full_nvlink = false;
  r = {};
  EXPECT_FALSE(CustomPredicatesHold(s, call, r));
  EXPECT_FALSE(r.Held(Predicate::kNvlinkOrWorldTwo));

  // Two PCIe GPUs qualify for the legacy v1 (SGLang 0.5.23 gives a group
  // without NVLink v1, never v2: ChooseCustomGeneration).
  s.group_world_size = 2;
  s.generation = 1;
  r = {};
  EXPECT_TRUE(CustomPredicatesHold(s, call, r));
  s.generation = 2;
  r = {};
  EXPECT_FALSE(CustomPredicatesHold(s, call, r)) << "v2 needs full NVLink";
  EXPECT_FALSE(r.Held(Predicate::kNvlinkOrWorldTwo));
  s.generation = 1;

  s.same_node = false;
  r = {};
  EXPECT_FALSE(CustomPredicatesHold(s, call, r));
  EXPECT_FALSE(r.Held(Predicate::kSameNode));
}

}  // namespace
}  // namespace lockstep
