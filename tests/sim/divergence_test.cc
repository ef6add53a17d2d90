// The first divergent decision of a hang report is the first call, in call
// order, at which a group's members chose differently: not the divergent call
// of the lowest group object, and never a call whose members agreed.

#include <memory>

#include "dispatch/group_coordinator.h"
#include "dispatch/policy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/sim_run.h"
#include "sim/simulation.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::lockstep::testing::ScenarioFromYaml;
using ::testing::HasSubstr;
using ::testing::Not;

// tp=4, ep=2, moe_dp=2: each step's embedding over TP [0..3] (the group
// object the layout lists first), then per layer the attention output over
// attention TP [0,1],[2,3] and the MoE reduction over MOE_EP [0,1],[2,3] (the
// last of the three objects).
const char* kScenario = R"(
name: moedp-divergence
hardware: h200x8
parallel: {tp: 4, ep: 2, moe_dp: 2, attn_cp: 2}
model: qwen3-30b-a3b
dispatch: {fused_backend: true, max_tokens: 256}
workload: {steps: 2, tokens: [16], layers: 3}
)";

// The reference, except on the coordinators it is given to: at `blocks_seq`
// the fused kernel is launched with another grid (a choice the simulated
// fused kernel does not read: the call runs the same), at `input_seq` the
// record carries another workspace capacity (a predicate input: the choice
// is the same), and at `nccl_seq` the call goes to NCCL whatever the
// predicates say.
class OneRankDiffers : public DispatchPolicy {
 public:
  OneRankDiffers(int64_t blocks_seq, int64_t input_seq, int64_t nccl_seq)
      : blocks_seq_(blocks_seq), input_seq_(input_seq), nccl_seq_(nccl_seq) {}
  CommBackend* Choose(const GroupBackends& b, const CallDesc& call,
                      DecisionRecord& record) const override {
    CommBackend* chosen = DispatchPolicy::Choose(b, call, record);
    const auto seq = static_cast<int64_t>(record.seq);
    if (seq == blocks_seq_) record.blocks += 1;
    if (seq == input_seq_) record.workspace_capacity.max_tokens += 7;
    if (seq == nccl_seq_ && b.nccl != nullptr) {
      record.backend = BackendKind::kNccl;
      record.algorithm = Algorithm::kNone;
      record.blocks = 0;
      record.norm_fused = false;
      return b.nccl;
    }
    return chosen;
  }

 private:
  int64_t blocks_seq_;
  int64_t input_seq_;
  int64_t nccl_seq_;
};

// Gives rank `rank`'s coordinator of group object `role` the policy `policy`.
void Rewire(SimRun& run, int rank, GroupRole role, const DispatchPolicy* policy) {
  const int object = run.ctx.layout.ObjectIndex(role);
  std::unique_ptr<GroupCoordinator>& c =
      run.ranks[static_cast<size_t>(rank)].wiring.groups[static_cast<size_t>(object)].coordinator;
  c = std::make_unique<GroupCoordinator>(c->name(), c->group(), c->world_size(), c->rank_in_group(),
                                         c->hint(), c->backends(), policy);
}

SimResult RunScenario(const SimOptions& o) {
  absl::StatusOr<SimResult> r = Simulate(ScenarioFromYaml(kScenario), o, PolicyRegistry());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

TEST(DivergenceTest, TheScenarioRunsCleanWithoutAPerturbation) {
  const SimResult r = RunScenario(SimOptions{});
  ASSERT_EQ(r.verdict, Verdict::kClean) << r.summary;
}

// Rank 1 launches MOE_EP's call 0 with another grid (its call 2), then
// attention TP's call 1 (its call 3, on a group object the layout lists
// before MOE_EP),
// then takes NCCL at attention TP's call 2 (its call 5), which hangs. The
// report names the MoE call: the first at which the members chose
// differently, not the divergent call of the lowest group object.
TEST(DivergenceTest, TheEarliestDivergentCallIsReportedNotTheLowestGroupObject) {
  const OneRankDiffers attention(/*blocks_seq=*/1, /*input_seq=*/-1, /*nccl_seq=*/2);
  const OneRankDiffers moe(/*blocks_seq=*/0, /*input_seq=*/-1, /*nccl_seq=*/-1);
  SimOptions o;
  o.customize = [&](SimRun& run) {
    ASSERT_LT(run.ctx.layout.ObjectIndex(GroupRole::kAttnTp),
              run.ctx.layout.ObjectIndex(GroupRole::kMoeEp));
    Rewire(run, 1, GroupRole::kAttnTp, &attention);
    Rewire(run, 1, GroupRole::kMoeEp, &moe);
  };
  const SimResult r = RunScenario(o);
  ASSERT_EQ(r.verdict, Verdict::kHang) << r.summary;
  const nlohmann::json& d = r.details["first_divergent_decision"];
  EXPECT_EQ(d["group"], "moe_ep") << r.summary;
  EXPECT_EQ(d["peers"], "[0,1]") << r.summary;
  EXPECT_EQ(d["seq"], 0) << r.summary;
  EXPECT_EQ(d["site"], "step 0 layer 0 moe") << r.summary;
  EXPECT_EQ(d["call_position"], 2) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("first divergent decision: moe_ep [0,1] call 0 "
                                   "(step 0 layer 0 moe): "));
  EXPECT_THAT(r.summary, HasSubstr("rank 1 chose fused/one_shot: blocks="));
  ASSERT_EQ(d["sides"].size(), 2u);
  EXPECT_TRUE(d["missing_ranks"].empty()) << r.summary;
}

// Ranks 2 and 3 hang at their first attention call (rank 3 takes NCCL),
// while ranks 0 and 1 finish the step and make the next embedding call over
// TP [0..3], agreeing on it, without ranks 2 and 3. That call, on the group
// object listed first, is not a divergent decision: the attention call is.
TEST(DivergenceTest, ACallWhoseMembersAgreedIsNeverReported) {
  const OneRankDiffers attention(/*blocks_seq=*/-1, /*input_seq=*/-1, /*nccl_seq=*/0);
  SimOptions o;
  o.customize = [&](SimRun& run) { Rewire(run, 3, GroupRole::kAttnTp, &attention); };
  const SimResult r = RunScenario(o);
  ASSERT_EQ(r.verdict, Verdict::kHang) << r.summary;
  const nlohmann::json& d = r.details["first_divergent_decision"];
  EXPECT_EQ(d["group"], "attn_tp") << r.summary;
  EXPECT_EQ(d["peers"], "[2,3]") << r.summary;
  EXPECT_EQ(d["seq"], 0) << r.summary;
  EXPECT_EQ(d["site"], "step 0 layer 0 attn_out") << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("rank 3 chose nccl"));
  EXPECT_THAT(r.summary, Not(HasSubstr("never made this call")));
  EXPECT_TRUE(d["missing_ranks"].empty()) << r.summary;
  // Ranks 0 and 1 did get to the agreed call: they wait in it.
  ASSERT_FALSE(r.details["blocked"].empty());
  const nlohmann::json& rank0 = r.details["blocked"][0];
  EXPECT_EQ(rank0["rank"], 0);
  EXPECT_THAT(rank0["waits_for"].get<std::string>(), HasSubstr("custom all-reduce tp [0,1,2,3]"))
      << rank0.dump();
}

// Rank 1 decides attention TP's call 0 from another workspace capacity but
// chooses what its peers choose (its call 1), then takes NCCL at
// attention TP's call 2 (its call 5). The report names call 2, where the
// members chose differently, not the earlier call where they chose alike.
TEST(DivergenceTest, ACallWhereOnlyTheInputsDifferedComesAfterADifferentChoice) {
  const OneRankDiffers attention(/*blocks_seq=*/-1, /*input_seq=*/0, /*nccl_seq=*/2);
  SimOptions o;
  o.customize = [&](SimRun& run) { Rewire(run, 1, GroupRole::kAttnTp, &attention); };
  const SimResult r = RunScenario(o);
  ASSERT_EQ(r.verdict, Verdict::kHang) << r.summary;
  const nlohmann::json& d = r.details["first_divergent_decision"];
  EXPECT_EQ(d["group"], "attn_tp") << r.summary;
  EXPECT_EQ(d["peers"], "[0,1]") << r.summary;
  EXPECT_EQ(d["seq"], 2) << r.summary;
  EXPECT_EQ(d["call_position"], 5) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("rank 1 chose nccl"));
}

// The decision logs are compacted as a run goes (CompactDecisionLogs): calls
// whose members all made them, decided alike and moved on are dropped. Each
// perturbation above, compacted after every record, reports exactly what the
// run that keeps the whole log reports: an earlier call whose members chose
// differently, or only differed in their inputs, is never compacted away.
TEST(DivergenceTest, CompactingTheDecisionLogsAfterEveryRecordChangesNoReport) {
  struct Perturbation {
    OneRankDiffers attention;
    OneRankDiffers moe;
  };
  const Perturbation cases[] = {
      {OneRankDiffers(1, -1, 2), OneRankDiffers(0, -1, -1)},
      {OneRankDiffers(-1, 0, 2), OneRankDiffers(-1, -1, -1)},
      {OneRankDiffers(-1, 0, -1), OneRankDiffers(-1, -1, 1)},
      {OneRankDiffers(-1, -1, 3), OneRankDiffers(0, 1, -1)},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    SimOptions o;
    o.customize = [&](SimRun& run) {
      Rewire(run, 1, GroupRole::kAttnTp, &cases[i].attention);
      Rewire(run, 1, GroupRole::kMoeEp, &cases[i].moe);
    };
    o.compact_decisions_at = 1;
    const SimResult compacted = RunScenario(o);
    o.compact_decisions_at = 0;
    o.keep_decision_log = true;  // keeps every record
    const SimResult whole = RunScenario(o);
    EXPECT_NE(whole.verdict, Verdict::kClean) << "case " << i << ": " << whole.summary;
    EXPECT_EQ(compacted.verdict, whole.verdict) << "case " << i;
    EXPECT_EQ(compacted.summary, whole.summary) << "case " << i;
    EXPECT_EQ(compacted.details.dump(), whole.details.dump()) << "case " << i;
  }
}

}  // namespace
}  // namespace lockstep
