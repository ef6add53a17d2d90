// The custom all-reduce v2's launch choice against SGLang 0.5.23's tables
// (configs/custom_all_reduce_v2.py) and CustomAllReduceV2's clipping and
// _pick_config.

#include "dispatch/custom_launch.h"

#include "dispatch/backend.h"
#include "dispatch/serving_args.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kDefaultMax = 16 * kMiB;  // SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB

TEST(CustomLaunchTest, H200EightRanksPushesUpTo128KiBThenPullsInTwoShots) {
  const CustomV2Config c = CustomV2ConfigFor(90, 8, kDefaultMax);
  EXPECT_EQ(c.push_blocks, 132);
  EXPECT_EQ(c.pull_blocks, 64);
  for (bool graph : {false, true}) {
    EXPECT_EQ(SelectCustomV2Algorithm(c, 16, graph), Algorithm::kOneShotPush);
    EXPECT_EQ(SelectCustomV2Algorithm(c, 128 * kKiB, graph), Algorithm::kOneShotPush);
    // 1shot_pull's threshold equals 1shot_push's: disabled.
    EXPECT_EQ(SelectCustomV2Algorithm(c, 128 * kKiB + 16, graph), Algorithm::kTwoShotPull);
    // The tables' 32 MiB (graph) and 128 MiB (eager) are clipped to the
    // 16 MiB pull workspace.
    EXPECT_EQ(SelectCustomV2Algorithm(c, kDefaultMax, graph), Algorithm::kTwoShotPull);
    EXPECT_EQ(SelectCustomV2Algorithm(c, kDefaultMax + 16, graph), Algorithm::kNone);
  }
  EXPECT_EQ(SelectCustomV2Algorithm(c, 0, false), Algorithm::kNone);
  EXPECT_EQ(c.push_slot_bytes, 128 * kKiB);
}

TEST(CustomLaunchTest, H200TwoRanksPushEverythingTheBoundAdmits) {
  // 1shot_push 16 MiB (graph) / 32 MiB (eager), clipped to the 16 MiB push
  // slots; the pull thresholds clip to 16 MiB too and so never win.
  const CustomV2Config c = CustomV2ConfigFor(90, 2, kDefaultMax);
  for (bool graph : {false, true}) {
    EXPECT_EQ(SelectCustomV2Algorithm(c, kDefaultMax, graph), Algorithm::kOneShotPush);
    EXPECT_EQ(SelectCustomV2Algorithm(c, kDefaultMax + 16, graph), Algorithm::kNone);
  }
  // A larger bound lets eager 1shot_pull serve 32..128 MiB.
  const CustomV2Config big = CustomV2ConfigFor(90, 2, 256 * kMiB);
  EXPECT_EQ(SelectCustomV2Algorithm(big, 16 * kMiB + 16, /*graph=*/true), Algorithm::kOneShotPull);
  EXPECT_EQ(SelectCustomV2Algorithm(big, 32 * kMiB, /*graph=*/false), Algorithm::kOneShotPush);
  EXPECT_EQ(SelectCustomV2Algorithm(big, 32 * kMiB + 16, /*graph=*/false), Algorithm::kOneShotPull);
  EXPECT_EQ(SelectCustomV2Algorithm(big, 128 * kMiB + 16, /*graph=*/false), Algorithm::kNone);
}

TEST(CustomLaunchTest, GraphAndEagerCutOversDifferAtThreeRanks) {
  const CustomV2Config c = CustomV2ConfigFor(90, 3, kDefaultMax);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 2 * kMiB, /*graph=*/true), Algorithm::kTwoShotPull);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 2 * kMiB, /*graph=*/false), Algorithm::kOneShotPush);
}

TEST(CustomLaunchTest, BlackwellHasTwoShotPushAtFourAndEightRanksAndServesSixteen) {
  const CustomV2Config c = CustomV2ConfigFor(100, 8, kDefaultMax);
  EXPECT_EQ(c.push_blocks, 148);
  EXPECT_EQ(c.pull_blocks, 96);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 256 * kKiB, false), Algorithm::kOneShotPush);
  // 2shot_push up to 8 MiB: its slots hold two halves of a 1 MiB chunk
  // (two_shot_push_slot_bytes: 2 MiB), so the push plane is 2 MiB a slot.
  EXPECT_EQ(SelectCustomV2Algorithm(c, 256 * kKiB + 16, false), Algorithm::kTwoShotPush);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 8 * kMiB, false), Algorithm::kTwoShotPush);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 8 * kMiB + 16, false), Algorithm::kTwoShotPull);
  EXPECT_EQ(c.push_slot_bytes, 2 * kMiB) << "two halves of an 8 MiB message's 1 MiB chunk";
  EXPECT_EQ(CustomV2ConfigFor(100, 2, kDefaultMax).pull_blocks, 148);
  EXPECT_GT(CustomV2ConfigFor(100, 16, kDefaultMax).push_blocks, 0);
  EXPECT_EQ(CustomV2ConfigFor(90, 16, kDefaultMax).push_blocks, 0) << "SM90 has no 16-rank table";
  EXPECT_EQ(SelectCustomV2Algorithm(CustomV2ConfigFor(90, 16, kDefaultMax), 1024, false),
            Algorithm::kNone);
}

// The workspaces are whole KiB (custom_all_reduce_v2.py:176-181) and the
// thresholds are clipped to them, not to the bound: a 1500-byte bound serves
// 2 KiB, and the regions the hardware runner allocates are these sizes.
TEST(CustomLaunchTest, ThresholdsFollowTheKiBAlignedWorkspacesNotTheRawBound) {
  const CustomV2Config c = CustomV2ConfigFor(90, 8, 1500);
  EXPECT_EQ(c.push_slot_bytes, 2048);
  EXPECT_EQ(c.pull_bytes, 2048);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 2000, false), Algorithm::kOneShotPush);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 2048, false), Algorithm::kOneShotPush);
  EXPECT_EQ(SelectCustomV2Algorithm(c, 2064, false), Algorithm::kNone);
}

TEST(CustomLaunchTest, TheRecordCarriesAlgorithmGridAndGraphInputs) {
  CustomAgreedState s = ChooseCustomGeneration(CustomAllReduceLimits(ServingArgs{}, Platform{}), 8,
                                               /*same_node=*/true,
                                               /*full_nvlink=*/true, /*one_clique=*/true);
  ASSERT_EQ(s.generation, 2);
  CallDesc call;
  call.tensor = TensorDesc::Matrix(512, 8192, DType::kBf16);  // 8 MiB
  call.context.graph_capture = true;
  DecisionRecord r;
  ASSERT_TRUE(CustomPredicatesHold(s, call, r));
  ConfigureCustomV2Launch(s, AgreedCustomV2Config(s), call, r);
  EXPECT_EQ(r.algorithm, Algorithm::kTwoShotPull);
  EXPECT_EQ(r.blocks, 64);
  EXPECT_TRUE(r.graph_inputs) << "a captured pull call reads registered inputs";

  call.tensor.dims[0] = 8;  // 128 KiB: pushed, no graph row
  DecisionRecord push;
  ASSERT_TRUE(CustomPredicatesHold(s, call, push));
  ConfigureCustomV2Launch(s, AgreedCustomV2Config(s), call, push);
  EXPECT_EQ(push.algorithm, Algorithm::kOneShotPush);
  EXPECT_EQ(push.blocks, 132);
  EXPECT_FALSE(push.graph_inputs);

  // Across the nodes of one NVLink clique v2 never reads registered inputs.
  CustomAgreedState clique = ChooseCustomGeneration(
      CustomAllReduceLimits(ServingArgs{}, Platform{}), 8, /*same_node=*/false,
      /*full_nvlink=*/true, /*one_clique=*/true);
  call.tensor.dims[0] = 512;
  DecisionRecord staged;
  ASSERT_TRUE(CustomPredicatesHold(clique, call, staged));
  ConfigureCustomV2Launch(clique, AgreedCustomV2Config(clique), call, staged);
  EXPECT_EQ(staged.algorithm, Algorithm::kTwoShotPull);
  EXPECT_FALSE(staged.graph_inputs);

  // Past every threshold the predicate fails and records the bound.
  call.tensor.dims[0] = 2048;  // 32 MiB
  DecisionRecord too_big;
  EXPECT_FALSE(CustomPredicatesHold(s, call, too_big));
  EXPECT_FALSE(too_big.Held(Predicate::kBytesBelowMax));
  EXPECT_EQ(too_big.custom_max_bytes, kDefaultMax);
}

class NoopCustomBackend : public CustomAllReduceBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override { return absl::OkStatus(); }
};

// The backend computes its v2 configuration when its state is set, and again
// when the state changes (a fault's capacity view sets a smaller bound): its
// decisions equal those computed from the state alone.
TEST(CustomLaunchTest, TheBackendsConfigurationFollowsItsAgreedState) {
  CustomAgreedState s = ChooseCustomGeneration(CustomAllReduceLimits(ServingArgs{}, Platform{}), 8,
                                               /*same_node=*/true,
                                               /*full_nvlink=*/true, /*one_clique=*/true);
  ASSERT_EQ(s.generation, 2);
  NoopCustomBackend backend;
  backend.set_agreed(s);
  const CustomV2Config expected = CustomV2ConfigFor(s.sm, s.group_world_size, s.max_bytes);
  EXPECT_EQ(backend.v2_config().pull_bytes, expected.pull_bytes);
  EXPECT_EQ(backend.v2_config().push_slot_bytes, expected.push_slot_bytes);
  EXPECT_EQ(backend.v2_config().graph.MaxBytes(), expected.graph.MaxBytes());

  CallDesc call;
  call.tensor = TensorDesc::Matrix(512, 8192, DType::kBf16);  // 8 MiB
  DecisionRecord from_backend, from_state;
  EXPECT_TRUE(backend.CanUse(call, from_backend));
  EXPECT_TRUE(CustomPredicatesHold(s, call, from_state));
  EXPECT_EQ(from_backend.custom_max_bytes, from_state.custom_max_bytes);

  s.max_bytes = 1 << 20;  // a bound under the message
  backend.set_agreed(s);
  EXPECT_LT(backend.v2_config().pull_bytes, expected.pull_bytes);
  DecisionRecord smaller;
  EXPECT_FALSE(backend.CanUse(call, smaller));
  EXPECT_FALSE(smaller.Held(Predicate::kBytesBelowMax));
  EXPECT_EQ(smaller.custom_max_bytes, backend.v2_config().eager.MaxBytes());

  s.generation = 1;  // no v2 table below v2
  backend.set_agreed(s);
  EXPECT_EQ(backend.v2_config().pull_bytes, 0);
}

}  // namespace
}  // namespace lockstep
