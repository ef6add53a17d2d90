// The hybrid EP+TP regression suite: one test per bug of the family, on the
// layouts serving teams run (tp4·ep2, tp8·ep2, tp8·ep4, moe_dp > 1, DP
// attention with EP, pp2 × hybrid). Each test asserts that the reference
// design gives the scenario's expected verdict on every seed AND that the
// mutant reproducing the bug turns the same scenario into its silent failure.

#include <string>
#include <string_view>
#include <vector>

#include "dispatch/fusion_gate.h"
#include "dispatch/group_layout.h"
#include "dispatch/parallel_config.h"
#include "dispatch/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property_seeds.h"
#include "tests/regression/regression_util.h"

namespace lockstep::regression {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

ParallelWidths WidthsOf(std::string_view name) {
  absl::StatusOr<Scenario> s = LoadCatalogueScenario(name);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? DeriveWidths(s->parallel) : ParallelWidths{};
}

// --- tp4·ep2: MOE_EP [0,2],[1,3] and MOE_TP [0,1],[2,3], equal size. ---------

TEST(HybridEpTp, Tp4Ep2MoeTpAllReduceNeverUsesTheEpBoundWorkspace_PR30700) {
  ExpectReferenceHolds("tp4-ep2-qwen3-h200");
  ExpectReferenceHolds("faults/tp4-ep2-both-moe-groups-tagged");
  // Tagging MOE_TP too and matching the workspace by size reduces the MoE-TP
  // all-reduce over the EP peers: half the ranks twice, the other half never.
  ExpectMutantCaught(
      "tp4-ep2-qwen3-h200", "both-moe-groups-tagged", Verdict::kWrongPeer,
      AllOf(HasSubstr("moe"), HasSubstr("missing ranks"), HasSubstr("double_counted ranks")));
  ExpectMutantCaught("faults/tp4-ep2-both-moe-groups-tagged", "both-moe-groups-tagged",
                     Verdict::kWrongPeer, HasSubstr("double_counted ranks"));
}

TEST(HybridEpTp, Tp4Ep2FusionGateRefusesHalfPeerReduction_SGLang32963) {
  EXPECT_TRUE(WidthsOf("tp4-ep2-qwen3-h200").IsHybridEpTp());
  ExpectReferenceHolds("tp4-ep2-qwen3-h200");
  // Qwen3-30B-A3B at tp4 ep2 produced garbage: the next layer's fused AR +
  // norm reduced the MoE output over MOE_EP only.
  ExpectMutantCaught("tp4-ep2-qwen3-h200", "no-hybrid-fusion-gate", Verdict::kWrongPeer,
                     AllOf(HasSubstr("moe_deferred"), HasSubstr("reduced 2 contributions"),
                           HasSubstr("missing ranks")));
}

TEST(HybridEpTp, Tp4Ep2OnPcieFusionGateStillRefusesTheEpPairKernel_SGLang32963) {
  // On the PCIe box (SM89) no fused kernel exists, but the mutant's deferred
  // sum still completes at the next input over MOE_EP: half the peers.
  ExpectReferenceHolds("tp4-ep2-qwen3-pcie");
  ExpectReferenceHolds("faults/tp4-ep2-pcie-rank-killed");
  ExpectMutantCaught("tp4-ep2-qwen3-pcie", "no-hybrid-fusion-gate", Verdict::kWrongPeer,
                     AllOf(HasSubstr("moe_deferred"), HasSubstr("missing ranks")));
}

TEST(HybridEpTp, Tp4Ep2ReplicatedMoeOutputIsNotReducedAgain_SGLang31699) {
  ExpectReferenceHolds("tp4-ep2-qwen3-h200");
  ExpectMutantCaught("tp4-ep2-qwen3-h200", "allreduce-replicated-output", Verdict::kWrongPeer,
                     AllOf(HasSubstr("moe_replicated"), HasSubstr("double_counted ranks 0-3")));
}

// --- tp8·ep2: MOE_EP [0,4],[1,5],[2,6],[3,7], MOE_TP [0..3],[4..7]. ----------

TEST(HybridEpTp, Tp8Ep2FusionGateRefusesHalfPeerReduction_SGLang32012) {
  const ParallelWidths w = WidthsOf("tp8-ep2-deepseek-v3-h200");
  EXPECT_EQ(w.moe_tp, 4);
  EXPECT_TRUE(w.IsHybridEpTp());
  ExpectReferenceHolds("tp8-ep2-deepseek-v3-h200");
  // The fused kernel of the next layer reduces over an EP pair: 2 of 8.
  ExpectMutantCaught("tp8-ep2-deepseek-v3-h200", "no-hybrid-fusion-gate", Verdict::kWrongPeer,
                     AllOf(HasSubstr("moe_deferred"), HasSubstr("reduced 2 contributions")));
}

TEST(HybridEpTp, Tp8Ep2TaggedMoeTpGroupOrOwnFlagNeverSplitsTheMergedReduction_SGLang32012) {
  // Faults on the MoE groups leave the merged TP reduction intact; the
  // ungated fusion still halves it under the same faults.
  ExpectReferenceHolds("faults/tp8-ep2-both-moe-groups-tagged");
  ExpectReferenceHolds("faults/tp8-ep2-workspace-initialized-view");
  ExpectMutantCaught("faults/tp8-ep2-both-moe-groups-tagged", "no-hybrid-fusion-gate",
                     Verdict::kWrongPeer, HasSubstr("missing ranks"));
}

TEST(HybridEpTp, Tp8Ep2PredicatesReadOnlyVotedState_PR30700) {
  ExpectReferenceHolds("faults/tp8-ep2-workspace-initialized-view");
  // Rank 4 reading its own uninitialised flag leaves the fused kernel alone.
  ExpectMutantCaught("faults/tp8-ep2-workspace-initialized-view", "local-predicates",
                     Verdict::kHang,
                     AllOf(HasSubstr("first divergent decision"), HasSubstr("rank 4 chose")));
}

// --- tp8·ep4: MOE_EP [0,2,4,6],[1,3,5,7], MOE_TP [0,1],[2,3],[4,5],[6,7]. ----

TEST(HybridEpTp, Tp8Ep4FusionGateRefusesHalfPeerReduction_SGLang32963) {
  const ParallelWidths w = WidthsOf("tp8-ep4-deepseek-v3-h200");
  EXPECT_EQ(w.moe_ep, 4);
  EXPECT_EQ(w.moe_tp, 2);
  ExpectReferenceHolds("tp8-ep4-deepseek-v3-h200");
  ExpectMutantCaught("tp8-ep4-deepseek-v3-h200", "no-hybrid-fusion-gate", Verdict::kWrongPeer,
                     AllOf(HasSubstr("moe_deferred"), HasSubstr("reduced 4 contributions")));
}

TEST(HybridEpTp, Tp8Ep4KernelErrorIsNeverSwallowedIntoNccl_PR30700) {
  ExpectReferenceHolds("faults/tp8-ep4-kernel-launch-failure");
  ExpectMutantCaught("faults/tp8-ep4-kernel-launch-failure", "swallow-kernel-error", Verdict::kHang,
                     HasSubstr("rank 6 chose nccl"));
}

// --- moe_dp > 1: MoE replicas; the reduction stays on MOE_EP. ---------------

TEST(HybridEpTp, MoeDpPostExpertsReductionIsNeverMergedIntoTp_SGLang37199) {
  const ParallelWidths w = WidthsOf("tp8-ep4-moedp2-deepseek-v3-h200");
  ASSERT_EQ(w.moe_dp, 2);
  // TP spans both MoE replicas: a merged TP reduction would count each
  // expert output twice. The plan reduces over MOE_EP alone.
  ExitInputs in;
  in.tokens = 8;
  const ExitPlan plan = DispatchPolicy().PlanFfnExit(w, in);
  EXPECT_FALSE(plan.merged) << plan.ToString();
  EXPECT_EQ(plan.kind, ExitKind::kCompleteNow) << plan.ToString();
  EXPECT_EQ(plan.reductions, std::vector<GroupRole>{GroupRole::kMoeEp}) << plan.ToString();
  ExpectReferenceHolds("tp8-ep4-moedp2-deepseek-v3-h200");
  ExpectMutantCaught("tp8-ep4-moedp2-deepseek-v3-h200", "allreduce-replicated-output",
                     Verdict::kWrongPeer,
                     AllOf(HasSubstr("moe_replicated"), HasSubstr("double_counted")));
}

TEST(HybridEpTp, MoeDpWorkspaceBoundToTheOtherReplicaIsRefused_PR30700) {
  // tp4 ep2 moe_dp2: MOE_EP [0,1],[2,3] and MOE_DP [0,2],[1,3] have the same
  // size; a workspace accepted on its size alone reduces over the replica.
  ExpectReferenceHolds("tp4-ep2-moedp2-qwen3-h200");
  ExpectReferenceHolds("faults/tp4-ep2-moedp2-bound-to-other-peers");
  ExpectMutantCaught("faults/tp4-ep2-moedp2-bound-to-other-peers", "workspace-matched-by-size",
                     Verdict::kWrongPeer, AllOf(HasSubstr("missing ranks"), HasSubstr("extra")));
}

TEST(HybridEpTp, MoeDpStaleBindingToTheOtherReplicaIsRefused_PR30700) {
  ExpectReferenceHolds("faults/tp4-ep2-moedp2-stale-binding");
  ExpectMutantCaught("faults/tp4-ep2-moedp2-stale-binding", "workspace-matched-by-size",
                     Verdict::kWrongPeer, HasSubstr("extra"));
}

TEST(HybridEpTp, MoeDpCapacityComesFromTheAgreedWorkspace_SGLang23317) {
  ExpectReferenceHolds("faults/tp8-ep4-moedp2-capacity-view");
  ExpectMutantCaught("faults/tp8-ep4-moedp2-capacity-view", "capacity-from-local-view",
                     Verdict::kHang, HasSubstr("chose custom"));
}

// --- DP attention with EP. ---------------------------------------------------

TEST(HybridEpTp, DpAttentionWithHybridEpFusionGateRefusesHalfPeerReduction_SGLang32963) {
  const ParallelWidths w = WidthsOf("dpattn-dp2-ep2-deepseek-v3-h200");
  EXPECT_EQ(w.attn_dp, 2);
  EXPECT_TRUE(w.IsHybridEpTp());
  ExpectReferenceHolds("dpattn-dp2-ep2-deepseek-v3-h200");
  ExpectReferenceHolds("dpattn-dp2-ep4-qwen3-h200");
  // Under attention DP the deferred sum is completed at the next input and
  // returned to each rank's rows (dp_return), over MOE_EP only.
  ExpectMutantCaught("dpattn-dp2-ep2-deepseek-v3-h200", "no-hybrid-fusion-gate",
                     Verdict::kWrongPeer,
                     AllOf(HasSubstr("dp_return"), HasSubstr("missing ranks")));
  ExpectMutantCaught("dpattn-dp2-ep4-qwen3-h200", "no-hybrid-fusion-gate", Verdict::kWrongPeer,
                     AllOf(HasSubstr("dp_return"), HasSubstr("missing ranks")));
}

TEST(HybridEpTp, DpAttentionWorkspaceBoundToEpPeersIsRefused_PR30700) {
  // tp8 ep4 dp2: ATTN_TP [0..3],[4..7] and MOE_EP [0,2,4,6],[1,3,5,7].
  ExpectReferenceHolds("faults/dpattn-ep4-attn-bound-to-other-peers");
  ExpectMutantCaught("faults/dpattn-ep4-attn-bound-to-other-peers", "workspace-matched-by-size",
                     Verdict::kWrongPeer, HasSubstr("extra ranks"));
}

TEST(HybridEpTp, DpAttentionDraftProjectionReducesOverAttentionTp_SGLang40399) {
  ExpectReferenceHolds("dpattn-dp2-speculative-deepseek-v3-h200");
  ExpectMutantCaught("dpattn-dp2-speculative-deepseek-v3-h200", "draft-projection-over-tp",
                     Verdict::kWrongPeer,
                     AllOf(HasSubstr("draft_projection"), HasSubstr("extra ranks")));
}

TEST(HybridEpTp, DpAttentionWithEpPadsToTheGatheredTokenCount_PR30700) {
  ExpectReferenceHolds("dpattn-dp8-ep8-deepseek-v3-h200");
  ExpectReferenceHolds("faults/dpattn-dp8-ep8-token-count-view");
  // A rank padding from its own count launches another token count.
  ExpectMutantCaught("faults/dpattn-dp8-ep8-token-count-view", "local-predicates", Verdict::kHang,
                     HasSubstr("first divergent decision"));
}

TEST(HybridEpTp, DpAttentionWithEpReplicatedMoeOutputIsNotReducedAgain_SGLang31699) {
  ExpectReferenceHolds("dpattn-dp2-ep8-deepseek-v3-h200");
  ExpectMutantCaught("dpattn-dp2-ep8-deepseek-v3-h200", "allreduce-replicated-output",
                     Verdict::kWrongPeer, HasSubstr("double_counted"));
}

// --- pp2 × hybrid: the flush at the stage boundary. -------------------------

TEST(HybridEpTp, PipelineFlushReducesOverEpAndMoeTp_SGLang28619) {
  const ParallelWidths w = WidthsOf("pp2-tp4-ep2-qwen3-h200");
  ASSERT_EQ(w.pp, 2);
  ASSERT_TRUE(w.IsHybridEpTp());
  // The reference flush completes the stage's last MoE sum as its exit plan
  // does: one TP reduction that covers both EP and MoE-TP.
  ExitInputs in;
  in.tokens = 8;
  in.last_in_stage = true;
  const DispatchPolicy reference;
  const ExitPlan exit = reference.PlanFfnExit(w, in);
  EXPECT_TRUE(exit.merged) << exit.ToString();
  EXPECT_EQ(reference.PipelineFlushReductions(w, exit), std::vector<GroupRole>{GroupRole::kTp})
      << exit.ToString();
  ExpectReferenceHolds("pp2-tp4-ep2-qwen3-h200");
  ExpectMutantCaught("pp2-tp4-ep2-qwen3-h200", "pp-flush-ep-only", Verdict::kWrongPeer,
                     AllOf(HasSubstr("reduced 2 contributions"), HasSubstr("missing ranks")));
}

TEST(HybridEpTp, PipelineFlushAcrossGb200TraysReducesOverEpAndMoeTp_SGLang28619) {
  ExpectReferenceHolds("pp2-tp8-ep2-deepseek-v3-gb200");
  ExpectReferenceHolds("faults/pp2-tp8-ep2-gb200-lost-write");
  ExpectMutantCaught("pp2-tp8-ep2-deepseek-v3-gb200", "pp-flush-ep-only", Verdict::kWrongPeer,
                     AllOf(HasSubstr("reduced 2 contributions"), HasSubstr("missing ranks")));
}

TEST(HybridEpTp, PipelineStagesMoeTpAllReduceNeverUsesTheEpBoundWorkspace_PR30700) {
  ExpectReferenceHolds("faults/pp2-tp4-ep2-both-moe-groups-tagged");
  ExpectReferenceHolds("faults/pp2-tp4-ep2-bound-to-other-peers");
  ExpectMutantCaught("faults/pp2-tp4-ep2-both-moe-groups-tagged", "both-moe-groups-tagged",
                     Verdict::kWrongPeer, HasSubstr("double_counted ranks"));
}

TEST(HybridEpTp, PipelineStagesFusionGateRefusesHalfPeerReduction_SGLang32963) {
  ExpectReferenceHolds("pp2-tp4-ep2-qwen3-h200");
  ExpectReferenceHolds("faults/pp2-tp4-ep2-rank-killed");
  ExpectMutantCaught("pp2-tp4-ep2-qwen3-h200", "no-hybrid-fusion-gate", Verdict::kWrongPeer,
                     HasSubstr("moe_deferred"));
}

}  // namespace
}  // namespace lockstep::regression
