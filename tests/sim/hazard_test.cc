// The hazards of SGLang PR #30700, built directly as faulty rank programs and
// policies. Each must fail in the simulator because the protocol or the data
// goes wrong (not because a rule says so), and the report must say why.

#include "absl/strings/str_format.h"
#include "dispatch/fused_launch.h"
#include "dispatch/pr30700_policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/sim_run.h"
#include "sim/simulation.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::lockstep::testing::ScenarioFromYaml;
using ::testing::AnyOf;
using ::testing::HasSubstr;

template <typename Policy>
SimResult RunWith(const Scenario& s, SimOptions o = {}) {
  PolicyRegistry registry;
  EXPECT_TRUE(registry.Register({"test", "", "", [] { return std::make_unique<Policy>(); }}).ok());
  o.policy = "test";
  absl::StatusOr<SimResult> r = Simulate(s, o, registry);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

SimResult Simulated(const Scenario& s, SimOptions o = {}) { return RunWith<DispatchPolicy>(s, o); }

std::vector<int> Ints(const nlohmann::json& j) { return j.get<std::vector<int>>(); }

const char* kTp8 = R"(
name: tp8
hardware: h200x8
parallel: {tp: 8}
model: {name: dense, hidden: 1024, layers: 2}
dispatch: {fused_backend: true, max_tokens: 128, custom_allreduce: false}
workload: {steps: 2, tokens: [4], embedding: false}
)";

const char* kTp4Ep2 = R"(
name: tp4-ep2
hardware: h200x8
parallel: {tp: 4, ep: 2}
model: {name: moe, hidden: 512, layers: 3, moe: true}
dispatch: {fused_backend: true, max_tokens: 128}
workload: {steps: 2, tokens: [4], embedding: false}
)";

TEST(HazardTest, OneRankTakingNcclWhileItsPeersEnterTheFusedKernelHangs) {
  SimOptions o;
  o.customize = [](SimRun& run) { run.ranks[3].wiring.attn_workspace.initialized = false; };
  const SimResult r = Simulated(ScenarioFromYaml(kTp8), o);
  ASSERT_EQ(r.verdict, Verdict::kHang) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("rank 3 chose nccl:"));
  EXPECT_THAT(r.summary, HasSubstr("workspace_initialized=false"));
  EXPECT_THAT(r.summary, HasSubstr("ranks 0-2,4-7 chose fused/one_shot"));
  // Every blocked rank is explained: the fused ranks poll for rank 3's push,
  // rank 3 waits in NCCL for the others.
  const auto& blocked = r.details["blocked"];
  ASSERT_EQ(blocked.size(), 8u);
  for (const auto& b : blocked) {
    if (b["rank"] == 3) {
      EXPECT_THAT(b["waits_for"].get<std::string>(), HasSubstr("NCCL"));
      EXPECT_EQ(Ints(b["waits_on"]).size(), 7u);
    } else {
      EXPECT_THAT(b["waits_for"].get<std::string>(), HasSubstr("for the push of rank 3"));
    }
  }
  EXPECT_THAT(r.wait_for_dot, HasSubstr("r0 -> r3"));
  EXPECT_THAT(r.wait_for_dot, HasSubstr("r3 -> r0"));
  EXPECT_EQ(r.details["would_fire"]["what"], "the fused kernel's bounded wait");
}

// The wait-for graph and the blocked list say the same thing: a node per
// blocked rank labelled with its wait, an edge per rank it waits on, and
// nothing else.
TEST(HazardTest, TheWaitForGraphHasANodePerBlockedRankAndAnEdgePerWait) {
  SimOptions o;
  o.customize = [](SimRun& run) { run.ranks[3].wiring.attn_workspace.initialized = false; };
  const SimResult r = Simulated(ScenarioFromYaml(kTp8), o);
  ASSERT_EQ(r.verdict, Verdict::kHang) << r.summary;
  const std::string& dot = r.wait_for_dot;
  ASSERT_THAT(dot, ::testing::StartsWith("digraph wait_for {\n"));
  EXPECT_THAT(dot, ::testing::EndsWith("}\n"));
  size_t edges = 0;
  for (const auto& b : r.details["blocked"]) {
    const int rank = b["rank"].get<int>();
    EXPECT_TRUE(b.contains("since_ns"));
    EXPECT_THAT(dot, HasSubstr(absl::StrFormat("  r%d [label=\"rank %d\\n%s\"];\n", rank, rank,
                                               b["waits_for"].get<std::string>())));
    for (int target : Ints(b["waits_on"])) {
      EXPECT_THAT(dot, HasSubstr(absl::StrFormat("  r%d -> r%d;\n", rank, target)));
      ++edges;
    }
  }
  size_t arrows = 0;
  for (size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1)) {
    ++arrows;
  }
  EXPECT_EQ(arrows, edges);
}

// The post-experts sum run as MOE_EP then MOE_TP where PR #30700's review
// merged it into one TP all-reduce.
ExitPlan SplitMergedSum(ExitPlan plan) {
  if (plan.merged && plan.kind == ExitKind::kCompleteNow) {
    plan.merged = false;
    plan.reductions = {GroupRole::kMoeEp, GroupRole::kMoeTp};
  }
  return plan;
}

// PR #30700 before its review: both MoE groups tagged, the workspace matched
// by world size only, and the post-experts reduction run as EP then MoE-TP.
class BeforeReviewPolicy : public Pr30700Policy {
 public:
  WorkspaceTags TagGroups(const ParallelLayout& layout, bool enabled) const override {
    WorkspaceTags tags = Pr30700Policy::TagGroups(layout, enabled);
    tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeEp))] =
        WorkspaceKind::kMoe;
    tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeTp))] =
        WorkspaceKind::kMoe;
    return tags;
  }
  CommBackend* Choose(const GroupBackends& b, const CallDesc& call,
                      DecisionRecord& r) const override {
    r.call = call;
    if (b.fused != nullptr) {
      const FusedAgreedState& s = b.fused->agreed();
      const Workspace* ws = s.workspace;
      if (ws != nullptr && ws->initialized && ws->world_size == s.group_world_size &&
          call.tensor.ndim == 2 && call.tensor.tokens() <= ws->capacity.max_tokens) {
        r.backend = BackendKind::kFused;
        r.algorithm = SelectFusedAlgorithm(call.tensor.bytes(), r.group_world_size);
        r.kernel_flags = kReferenceKernelFlags;  // the kernel itself is not at fault
        return b.fused;
      }
    }
    return Pr30700Policy::Choose(b, call, r);
  }
  ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const override {
    return SplitMergedSum(Pr30700Policy::PlanFfnExit(w, in));
  }
};

TEST(HazardTest, MoeTpAllReduceOnTheEpBoundWorkspaceReducesOverTheWrongPeers) {
  const SimResult r = RunWith<BeforeReviewPolicy>(ScenarioFromYaml(kTp4Ep2));
  ASSERT_EQ(r.verdict, Verdict::kWrongPeer) << r.summary;
  EXPECT_TRUE(r.exact_rerun) << "contributors are named by an exact-provenance rerun";
  const auto& c = r.details["contributors"];
  const int rank = r.details["rank"];
  // The MoE-TP stage reduced over the EP peers again: the rank's EP pair is
  // counted twice and its MoE-TP partner's pair is missing.
  const std::vector<int> ep_pair = rank % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
  const std::vector<int> other_pair =
      rank % 2 == 0 ? std::vector<int>{1, 3} : std::vector<int>{0, 2};
  EXPECT_EQ(Ints(c["double_counted"]), ep_pair);
  EXPECT_EQ(Ints(c["missing"]), other_pair);
  EXPECT_THAT(r.summary, HasSubstr("missing ranks"));
}

TEST(HazardTest, ReferenceRefusesTheSameBindingOnEveryRankAndStaysClean) {
  // The reference tags only the EP group; forcing the MoE-TP tag on is
  // refused by the exact peer-set check on every rank alike.
  class BothTagged : public Pr30700Policy {
   public:
    WorkspaceTags TagGroups(const ParallelLayout& layout, bool enabled) const override {
      WorkspaceTags tags = Pr30700Policy::TagGroups(layout, enabled);
      tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeTp))] =
          WorkspaceKind::kMoe;
      return tags;
    }
    ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const override {
      return SplitMergedSum(Pr30700Policy::PlanFfnExit(w, in));
    }
  };
  const SimResult r = RunWith<BothTagged>(ScenarioFromYaml(kTp4Ep2));
  EXPECT_EQ(r.verdict, Verdict::kClean) << r.summary;
}

// The hybrid EP+TP post-experts sum deferred into the next layer's input
// over MOE_EP (the pre-merge choice) instead of completed over TP now.
class NoHybridGatePolicy : public DispatchPolicy {
 public:
  ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) const override {
    ExitPlan plan = DispatchPolicy::PlanFfnExit(w, in);
    if (!w.IsHybridEpTp() || in.ffn != FfnKind::kMoe || in.terminal) return plan;
    plan.kind = ExitKind::kDefer;
    plan.group = GroupRole::kMoeEp;
    plan.reductions.clear();
    return plan;
  }
};

TEST(HazardTest, HybridPostExpertsFusedIntoTheNextLayerReducesOverHalfThePeers) {
  const SimResult r = RunWith<NoHybridGatePolicy>(ScenarioFromYaml(kTp4Ep2));
  ASSERT_EQ(r.verdict, Verdict::kWrongPeer) << r.summary;
  EXPECT_THAT(r.details["site"].get<std::string>(), HasSubstr("moe_deferred"));
  const int rank = r.details["rank"];
  const auto& c = r.details["contributors"];
  EXPECT_EQ(Ints(c["missing"]).size(), 2u) << "half of the 4 MoE peers";
  EXPECT_TRUE(Ints(c["extra"]).empty());
  EXPECT_THAT(Ints(c["missing"]), ::testing::Not(::testing::Contains(rank)));
}

class RaiseOnRank : public SimFaultPlan {
 public:
  explicit RaiseOnRank(int rank) : rank_(rank) {}
  absl::Status BeforeBackendCall(int rank, const CallPlace&,
                                 const DecisionRecord& record) override {
    if (rank == rank_ && record.backend == BackendKind::kFused) {
      return absl::InternalError("CUDA error: an illegal memory access was encountered");
    }
    return absl::OkStatus();
  }

 private:
  int rank_;
};

TEST(HazardTest, ARankThatRaisesInTheKernelStopsTheJob) {
  RaiseOnRank raise(5);
  SimOptions o;
  o.faults = &raise;
  const SimResult r = Simulated(ScenarioFromYaml(kTp8), o);
  ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
  EXPECT_EQ(r.details["rank"], 5);
  EXPECT_THAT(r.summary, HasSubstr("illegal memory access"));
}

TEST(HazardTest, ARankWithAnotherTokenCountBreaksTheLamportProtocol) {
  for (int skew : {1, -2, 5}) {
    SimOptions o;
    o.customize = [skew](SimRun& run) { run.token_skew[2] = skew; };
    const SimResult r = Simulated(ScenarioFromYaml(kTp8), o);
    EXPECT_THAT(r.verdict, AnyOf(Verdict::kHang, Verdict::kMismatch))
        << "skew " << skew << ": " << r.summary;
    if (r.verdict == Verdict::kHang) {
      EXPECT_THAT(r.summary, HasSubstr("tokens")) << r.summary;
    }
  }
}

TEST(HazardTest, AnotherTokenCountOnNcclIsACountMismatch) {
  Scenario s = ScenarioFromYaml(kTp8);
  s.dispatch.fused_backend = FusionBackendFlag::kNone;
  SimOptions o;
  o.customize = [](SimRun& run) { run.token_skew[6] = 3; };
  const SimResult r = Simulated(s, o);
  ASSERT_EQ(r.verdict, Verdict::kMismatch) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("NCCL"));
}

}  // namespace
}  // namespace lockstep
