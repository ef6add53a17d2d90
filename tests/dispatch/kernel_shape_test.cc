// The simulator and the GPU agree on every shape by construction: whenever
// the fused backend's predicates (dispatch/backend.h) admit a call, the
// launch the GPU backend builds from it (kernels/cuda/gpu_backends.cc
// MakeLaunch: elems = tokens * hidden, the norm epilogue one-shot, the
// algorithm from SelectFusedAlgorithm) passes the kernels' shape rules
// (LamportShapeRefusal, which LaunchLamport checks); and a shape the kernels
// refuse is refused by the predicates, on every rank alike.

#include "dispatch/kernel_shape.h"

#include <string>
#include <vector>

#include "dispatch/backend.h"
#include "dispatch/fused_launch.h"
#include "dispatch/serving_args.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;

TEST(KernelShapeTest, TheKernelsRules) {
  LamportShape s;
  s.world = 8;
  s.hidden = 7168;
  s.elems = 4 * 7168;
  EXPECT_EQ(LamportShapeRefusal(s), "");
  for (int world : {16, 32, 72}) {  // the GB200 scenarios' groups, one NVL72 domain
    s.world = world;
    EXPECT_EQ(LamportShapeRefusal(s), "") << world;
  }
  s.world = 73;
  EXPECT_THAT(LamportShapeRefusal(s), HasSubstr("the kernels serve 1 to 72 ranks"));
  s.world = 8;
  s.hidden = 4100;  // 8200 bytes: not whole 16-byte vectors
  s.elems = 4100;
  EXPECT_THAT(LamportShapeRefusal(s), HasSubstr("16-byte vectors"));
  s.elems = 2 * 4100;  // the message is whole vectors, a row is not
  EXPECT_EQ(LamportShapeRefusal(s), "");
  s.rms_norm = true;
  EXPECT_THAT(LamportShapeRefusal(s), HasSubstr("the norm needs whole rows"));
  s.hidden = 4096;
  s.elems = 4096;
  s.two_shot = true;
  EXPECT_THAT(LamportShapeRefusal(s), HasSubstr("one-shot only"));
}

struct Sweep {
  std::vector<int64_t> hidden = {512, 1000, 1001, 2048, 4100, 4104, 7168, 8192};
  std::vector<int64_t> tokens = {1, 3, 16, 64, 255, 1024, 4096};
  std::vector<DType> dtypes = {DType::kBf16, DType::kFp16, DType::kFp32};
  std::vector<int> worlds = {2, 4, 8, 16, 32};
  std::vector<FusedCapacityRule> rules = {FusedCapacityRule::kPerDimension,
                                          FusedCapacityRule::kTrtllm, FusedCapacityRule::kMnnvl};
};

TEST(KernelShapeTest, EveryCallThePredicatesAdmitIsOneTheKernelsRun) {
  const Sweep sweep;
  int admitted = 0, refused_for_shape = 0;
  for (int world : sweep.worlds) {
    for (DType dtype : sweep.dtypes) {
      for (int64_t hidden : sweep.hidden) {
        // A workspace wide enough for every call of the sweep: capacity never
        // decides, the shape does.
        Workspace ws;
        ws.kind = WorkspaceKind::kAttnTp;
        ws.group = GroupId{0};
        ws.world_size = world;
        ws.capacity = WorkspaceCapacity{4096, hidden, dtype};
        ws.initialized = true;
        for (FusedCapacityRule rule : sweep.rules) {
          FusedAgreedState state;
          state.library_available = true;
          state.workspace = &ws;
          state.group = GroupId{0};
          state.group_world_size = world;
          state.capacity_rule = rule;
          state.norm_path = true;
          state.norm_max_tokens = 4096;
          for (int64_t tokens : sweep.tokens) {
            for (bool norm : {false, true}) {
              CallDesc call;
              call.tensor = TensorDesc::Matrix(tokens, hidden, dtype);
              if (norm) {
                call.context.pattern = FusionPattern::kAllReduceResidualRmsNorm;
                call.context.norm_workspace = WorkspaceKind::kAttnTp;
              }
              DecisionRecord r;
              const bool held = norm ? FusedNormPredicatesHold(state, call, r)
                                     : FusedPredicatesHold(state, call, r);
              // The launch the GPU backend makes of this call.
              LamportShape shape;
              shape.world = world;
              shape.elems = tokens * hidden;
              shape.hidden = hidden;
              shape.elem_bytes = DTypeSize(dtype);
              shape.rms_norm = norm;
              shape.two_shot =
                  !norm && SelectFusedAlgorithm(call.tensor.bytes(), world) == Algorithm::kTwoShot;
              const std::string why = LamportShapeRefusal(shape);
              SCOPED_TRACE(::testing::Message()
                           << "world " << world << " dtype " << DTypeSize(dtype) << "B hidden "
                           << hidden << " tokens " << tokens << " norm " << norm << " rule "
                           << static_cast<int>(rule));
              if (held) {
                ++admitted;
                EXPECT_EQ(why, "") << "the predicates admit a call the kernels refuse";
              }
              if (!why.empty()) {
                // Refused before anyone launches, and for its shape.
                EXPECT_FALSE(held);
                EXPECT_TRUE(r.Evaluated(Predicate::kHiddenAligned));
                EXPECT_FALSE(r.Held(Predicate::kHiddenAligned));
                ++refused_for_shape;
              }
            }
          }
        }
      }
    }
  }
  // The sweep exercises both sides.
  EXPECT_GT(admitted, 1000);
  EXPECT_GT(refused_for_shape, 100);
}

// The custom all-reduce's half: every call the custom backend's predicates
// admit, for both generations and every platform's served world sizes, runs
// on lockstep's custom kernel (CustomShapeRefusal, which LaunchLamport
// checks for a custom launch), and the staging region sized to the agreed
// bound (GpuWiringRuntime::MakeCustom) holds it.
TEST(KernelShapeTest, TheCustomKernelRunsEveryCallTheCustomPredicatesAdmit) {
  int admitted = 0;
  for (const bool v2 : {true, false}) {
    for (const int sm : {90, 100}) {
      ServingArgs args;
      args.custom_all_reduce_v2 = v2;
      const CustomAgreedState limits = CustomAllReduceLimits(args, Platform{sm, 1});
      for (int world = 1; world <= 17; ++world) {
        const CustomAgreedState agreed = ChooseCustomGeneration(limits, world, true, true, true);
        const int64_t staging = (agreed.max_bytes + 15) / 16 * 16;
        for (int64_t bytes :
             {int64_t{2}, int64_t{16}, int64_t{24}, int64_t{4096}, int64_t{14336} * 7,
              agreed.max_bytes - 16, agreed.max_bytes, agreed.max_bytes + 16}) {
          CallDesc call;
          call.tensor = TensorDesc::Matrix(1, bytes / 2, DType::kBf16);
          DecisionRecord record;
          if (!CustomPredicatesHold(agreed, call, record)) continue;
          ++admitted;
          CustomShape shape;
          shape.world = world;
          shape.bytes = call.tensor.bytes();
          EXPECT_EQ(CustomShapeRefusal(shape), "")
              << "v2 " << v2 << " sm " << sm << " world " << world << " bytes " << bytes;
          EXPECT_LE(shape.bytes, staging) << "world " << world << " bytes " << bytes;
        }
      }
    }
  }
  EXPECT_GT(admitted, 50);
  CustomShape s;
  s.world = 17;
  s.bytes = 4096;
  EXPECT_THAT(CustomShapeRefusal(s), HasSubstr("serves 1 to 16 ranks"));
  s.world = 8;
  s.bytes = 24;
  EXPECT_THAT(CustomShapeRefusal(s), HasSubstr("16-byte vectors"));
}

}  // namespace
}  // namespace lockstep
