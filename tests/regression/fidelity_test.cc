// Fidelity to the systems users ship (docs/FIDELITY.md): SGLang 0.5.23's
// defaults and its inconsistencies, PR #30700's gate kept as a policy, and
// the report's note where a call goes to a backend lockstep does not run.
// The layout-by-layout comparison with 0.5.23 is the `conformance` ctest.

#include <string>

#include "dispatch/fusion_gate.h"
#include "dispatch/group_layout.h"
#include "dispatch/pr30700_policy.h"
#include "dispatch/serving_args.h"
#include "dispatch/workspace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report/report.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/simulation.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;

ParallelWidths Widths(int tp, int ep, int attn_dp = 1, int moe_dp = 1) {
  ParallelConfig c;
  c.tp = tp;
  c.ep = ep;
  c.attn_dp = attn_dp;
  c.moe_dp = moe_dp;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(c);
  EXPECT_TRUE(layout.ok()) << layout.status();
  return layout.ok() ? layout->widths() : ParallelWidths{};
}

TEST(FidelityTest, FusionIsOnByDefaultOnlyWhereSglangTurnsItOn) {
  const ParallelWidths tp8 = Widths(8, 1);
  const Platform h200{90, 1};
  // arg_groups/overrides.py:955-1003 @ 0.5.23.
  EXPECT_TRUE(FusionAutoEnabled("DeepseekV3ForCausalLM", h200, tp8));
  EXPECT_TRUE(FusionAutoEnabled("Qwen3MoeForCausalLM", h200, tp8));
  EXPECT_FALSE(FusionAutoEnabled("LlamaForCausalLM", h200, tp8)) << "not on the list";
  EXPECT_FALSE(FusionAutoEnabled("DeepseekV3ForCausalLM", h200, Widths(8, 1, 2))) << "attention DP";
  EXPECT_FALSE(FusionAutoEnabled("DeepseekV3ForCausalLM", Platform{90, 2}, tp8))
      << "SM90 across nodes";
  EXPECT_TRUE(FusionAutoEnabled("DeepseekV3ForCausalLM", Platform{100, 2}, tp8));
  EXPECT_FALSE(FusionAutoEnabled("DeepseekV3ForCausalLM", Platform{89, 1}, tp8)) << "L40S";
  EXPECT_FALSE(FusionAutoEnabled("DeepseekV3ForCausalLM", h200, Widths(1, 1))) << "tp 1";

  // The flag resolved (flashinfer_comm_fusion.py:46-100).
  ServingArgs args;
  args.fusion_backend = FusionBackendFlag::kAuto;
  EXPECT_EQ(*ResolveFusionBackend(args, h200, "", tp8), FusionBackend::kTrtllm);
  EXPECT_EQ(*ResolveFusionBackend(args, Platform{100, 4}, "", tp8), FusionBackend::kMnnvl);
  const absl::StatusOr<FusionBackend> across = ResolveFusionBackend(args, Platform{90, 2}, "", tp8);
  ASSERT_FALSE(across.ok());
  EXPECT_THAT(across.status().message(), HasSubstr("multi-node fusion needs Blackwell"));
  args.fusion_backend = FusionBackendFlag::kUnset;
  EXPECT_EQ(*ResolveFusionBackend(args, h200, "LlamaForCausalLM", tp8), FusionBackend::kNone);
}

TEST(FidelityTest, CustomAllReduceIsV2WithNvlinkAndTheLegacyV1OnAPciePair) {
  const CustomAgreedState limits = CustomAllReduceLimits(ServingArgs{}, Platform{90, 1});
  ASSERT_EQ(limits.generation, 2);
  EXPECT_EQ(limits.max_bytes, int64_t{16} << 20);
  const CustomAgreedState nvlink = ChooseCustomGeneration(limits, 8, true, true, true);
  EXPECT_EQ(nvlink.generation, 2);
  const CustomAgreedState pcie = ChooseCustomGeneration(limits, 2, true, false, false);
  EXPECT_EQ(pcie.generation, 1) << "v2 needs full NVLink (custom_all_reduce_v2.py:582-597)";
  EXPECT_EQ(pcie.max_bytes, int64_t{8} << 20);
  EXPECT_EQ(ChooseCustomGeneration(limits, 16, true, true, true).generation, 1)
      << "SM90's v2 tables stop at 8 ranks";
  const CustomAgreedState b200 = CustomAllReduceLimits(ServingArgs{}, Platform{100, 1});
  EXPECT_EQ(ChooseCustomGeneration(b200, 16, false, false, true).generation, 2)
      << "one NVLink clique across trays";
}

// INCONSISTENCY-1 of docs/FIDELITY.md: 0.5.23 tags MOE_EP for the MoE
// workspace (parallel_state.py:2378) but builds it on TP when EP and MoE-TP
// merge (moe/utils.py:900-909). The exact peer-set check refuses the pairing
// on every rank alike: no MoE call reaches that workspace through the tag.
TEST(FidelityTest, TheMoeTagAndTheMoeWorkspaceNameDifferentGroupsWhenTheSumMerges) {
  ParallelConfig c;
  c.tp = 4;
  c.ep = 2;
  const absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(c);
  ASSERT_TRUE(layout.ok());
  const DispatchPolicy reference;
  const WorkspaceTags tags = reference.TagGroups(*layout, true);
  EXPECT_EQ(tags.ForObject(layout->ObjectIndex(GroupRole::kMoeEp)), WorkspaceKind::kMoe);
  EXPECT_EQ(reference.MoeWorkspaceRole(layout->widths()), GroupRole::kTp);
  EXPECT_NE(layout->GroupOf(GroupRole::kMoeEp, 0), layout->GroupOf(GroupRole::kTp, 0));
  // PR #30700 bound the MoE workspace where it tagged it.
  EXPECT_EQ(Pr30700Policy().MoeWorkspaceRole(layout->widths()), GroupRole::kMoeEp);
}

// `--policy sglang-pr30700` reproduces the source document's gate: the MoE
// sum is deferred into the next layer exactly where
// should_fuse_mlp_allreduce_with_next_layer says so.
TEST(FidelityTest, Pr30700PolicyDefersExactlyWhereTheSeedsGateFuses) {
  const Pr30700Policy pr30700;
  for (int tp : {2, 4, 8, 16}) {
    for (int ep = 1; ep <= tp; ep *= 2) {
      for (int64_t tokens : {int64_t{1}, int64_t{64}, int64_t{4096}}) {
        const ParallelWidths w = Widths(tp, ep);
        FusionGateInputs gate;
        gate.tokens = tokens;
        gate.max_fused_tokens = 2048;
        ExitInputs in;
        in.ffn = FfnKind::kMoe;
        in.tokens = tokens;
        in.fused_backend = true;
        in.norm_max_tokens = 2048;
        const bool fuses = ShouldFuseMlpAllReduceWithNextLayer(w, gate);
        const ExitPlan plan = pr30700.PlanFfnExit(w, in);
        EXPECT_EQ(plan.kind == ExitKind::kDefer, fuses)
            << "tp" << tp << " ep" << ep << " tokens " << tokens << ": " << plan.ToString();
      }
    }
  }
}

TEST(FidelityTest, TheReferenceDefersTheSumRegardlessOfTheFusedBackend) {
  // 0.5.23 defers at the exit and lets the next layer's input decide the
  // fusion (layer_boundary/exit.py:267-353): with no fused backend the
  // deferred sum is a plain all-reduce there.
  ExitInputs in;
  in.tokens = 64;
  in.fused_backend = false;
  EXPECT_EQ(DispatchPolicy().PlanFfnExit(Widths(8, 8), in).kind, ExitKind::kDefer);
  EXPECT_EQ(DispatchPolicy().PlanFfnExit(Widths(4, 2), in).kind, ExitKind::kCompleteNow)
      << "hybrid EP+TP never defers (post_experts_sum_is_one_all_reduce)";
}

TEST(FidelityTest, ACallToAnUnmodelledBackendIsSaidInTheReport) {
  absl::StatusOr<Scenario> s = ParseScenario(R"(
version: 1
name: cutedsl
hardware: b200x8
parallel: {tp: 4}
model: deepseek-v3
dispatch: {fused_backend: cutedsl, max_tokens: 256}
workload: {steps: 1, tokens: [4], layers: 4}
)",
                                             "cutedsl.yaml", LOCKSTEP_SOURCE_DIR "/topologies");
  ASSERT_TRUE(s.ok()) << s.status();
  SimOptions o;
  const absl::StatusOr<SimResult> r = Simulate(*s, o, PolicyRegistry());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->unmodelled.size(), 1u);
  EXPECT_THAT(r->unmodelled[0], HasSubstr("cutedsl"));
  EXPECT_THAT(FormatResult(*s, o, *r), HasSubstr("unmodelled backend: the fused AR + norm runs"));
  EXPECT_EQ(MakeReport(*s, o, *r)["unmodelled"].size(), 1u);
}

}  // namespace
}  // namespace lockstep
