#include "faults/mutants.h"

#include "faults/explore.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property_seeds.h"

namespace lockstep::faults {
namespace {

using ::testing::HasSubstr;

std::string Topologies() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

TEST(MutantsTest, EveryMutantIsRegisteredWithItsSource) {
  const PolicyRegistry registry = MakePolicyRegistry();
  // reference and sglang-pr30700, then the mutants.
  EXPECT_EQ(registry.entries().size(), AllMutants().size() + 2);
  for (const MutantInfo& m : AllMutants()) {
    const PolicyRegistry::Entry* e = registry.Find(m.name);
    ASSERT_NE(e, nullptr) << m.name;
    EXPECT_FALSE(e->source.empty());
    absl::StatusOr<std::unique_ptr<DispatchPolicy>> p = registry.Create(m.name);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ((*p)->name(), m.name) << "the policy names itself as registered";
    EXPECT_TRUE(IsSilentFailure(m.expected)) << m.name;
  }
}

TEST(MutantsTest, ReferenceGivesEveryCatalogueScenarioItsExpectation) {
  absl::StatusOr<std::vector<Scenario>> scenarios = LoadScenarios(Topologies() + "/scenarios");
  ASSERT_TRUE(scenarios.ok());
  const PolicyRegistry registry = MakePolicyRegistry();
  ExploreOptions o;
  o.seeds = lockstep::testing::PropertySeeds(4);
  absl::StatusOr<ExploreResult> r = Explore(*scenarios, o, registry);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->all_acceptable) << FormatExploreSummary(*scenarios, *r, o);
}

// Issue 13: with relaxed memory on every catalogue scenario (faults
// included), the reference still gives each its expectation.
TEST(MutantsTest, ReferenceGivesEveryCatalogueScenarioItsExpectationUnderRelaxedMemory) {
  absl::StatusOr<std::vector<Scenario>> scenarios = LoadScenarios(Topologies() + "/scenarios");
  ASSERT_TRUE(scenarios.ok());
  for (Scenario& s : *scenarios) s.memory = MemoryModel::kRelaxed;
  const PolicyRegistry registry = MakePolicyRegistry();
  ExploreOptions o;
  o.seeds = lockstep::testing::PropertySeeds(2);
  o.jobs = 2;
  absl::StatusOr<ExploreResult> r = Explore(*scenarios, o, registry);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->all_acceptable) << FormatExploreSummary(*scenarios, *r, o);
}

TEST(MutantsTest, SwallowedKernelErrorTurnsAFailStopIntoAHang) {
  absl::StatusOr<std::vector<Scenario>> s =
      LoadScenarios(Topologies() + "/scenarios/faults/tp8-kernel-launch-failure.yaml");
  ASSERT_TRUE(s.ok());
  const PolicyRegistry registry = MakePolicyRegistry();
  SimOptions o;
  absl::StatusOr<SimResult> reference = SimulateWithFaults(s->front(), o, registry);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(reference->verdict, Verdict::kFailStop);
  EXPECT_THAT(reference->summary, HasSubstr("rank 3 raised"));
  o.policy = "swallow-kernel-error";
  absl::StatusOr<SimResult> mutant = SimulateWithFaults(s->front(), o, registry);
  ASSERT_TRUE(mutant.ok());
  EXPECT_EQ(mutant->verdict, Verdict::kHang);
  EXPECT_THAT(mutant->summary, HasSubstr("rank 3 chose nccl"));
  // The hang names the error rank 3 swallowed, where, and what it did instead.
  EXPECT_THAT(mutant->summary,
              HasSubstr("; rank 3 swallowed 'CUDA error: unspecified launch failure (all-reduce "
                        "call 5 on rank 3)' from its fused all-reduce at step 0 layer 2 attn_out "
                        "and fell back to nccl"));
  const nlohmann::json& swallowed = mutant->details["swallowed_errors"];
  ASSERT_EQ(swallowed.size(), 1u) << swallowed.dump();
  EXPECT_EQ(swallowed[0]["rank"], 3);
  EXPECT_EQ(swallowed[0]["call"], 5);
  EXPECT_EQ(swallowed[0]["group"], "tp");
  EXPECT_EQ(swallowed[0]["site"], "step 0 layer 2 attn_out");
  EXPECT_EQ(swallowed[0]["backend"], "fused");
  EXPECT_EQ(swallowed[0]["fell_back_to"], "nccl");
  EXPECT_THAT(swallowed[0]["error"].get<std::string>(),
              HasSubstr("CUDA error: unspecified launch failure"));
  // The reference swallows nothing: the error is the run's finding.
  EXPECT_FALSE(reference->details.contains("swallowed_errors")) << reference->details.dump();
}

// The same on a hybrid EP+TP layout, with the failure placed by site: the
// hang report names the post-experts reduction whose error was swallowed.
TEST(MutantsTest, ASwallowedErrorIsNamedAtTheSiteItWasPlaced) {
  absl::StatusOr<std::vector<Scenario>> s =
      LoadScenarios(Topologies() + "/scenarios/faults/tp8-ep4-kernel-launch-failure.yaml");
  ASSERT_TRUE(s.ok());
  Scenario scenario = s->front();
  ASSERT_EQ(scenario.faults.size(), 1u);
  scenario.faults[0].at_call = -1;
  scenario.faults[0].at_step = 1;
  scenario.faults[0].at_layer = 3;
  scenario.faults[0].at_site = "moe";
  const PolicyRegistry registry = MakePolicyRegistry();
  SimOptions o;
  o.policy = "swallow-kernel-error";
  absl::StatusOr<SimResult> r = SimulateWithFaults(scenario, o, registry);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->verdict, Verdict::kHang) << r->summary;
  EXPECT_THAT(r->summary, HasSubstr("; rank 6 swallowed 'CUDA error: unspecified launch failure"));
  EXPECT_THAT(r->summary,
              HasSubstr("from its fused all-reduce at step 1 layer 3 moe and fell back to nccl"));
  const nlohmann::json& swallowed = r->details["swallowed_errors"];
  ASSERT_EQ(swallowed.size(), 1u) << swallowed.dump();
  EXPECT_EQ(swallowed[0]["rank"], 6);
  EXPECT_EQ(swallowed[0]["site"], "step 1 layer 3 moe");
  // The first divergent decision is that call too.
  EXPECT_EQ(r->details["first_divergent_decision"]["site"], "step 1 layer 3 moe") << r->summary;
}

// custom-flag-without-release (vLLM #8404, #8558): caught on the catalogue's
// relaxed-memory scenario, with the store that arrived late named, and only
// there: with every store visible at once the missing release hides. v2
// (the default) releases only its 2shot_pull's second phase: without it a
// rank copies its workspace out before a peer's reduced shard landed, and
// holds its own contribution there; v1 releases its start flag: without it
// a peer reads the previous call's staged input.
TEST(MutantsTest, AFlagWithoutReleaseIsCaughtOnlyUnderRelaxedMemory) {
  absl::StatusOr<std::vector<Scenario>> s =
      LoadScenarios(Topologies() + "/scenarios/tp8-relaxed-memory-llama3-h200.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  Scenario relaxed = s->front();
  ASSERT_EQ(relaxed.memory, MemoryModel::kRelaxed);
  const PolicyRegistry registry = MakePolicyRegistry();
  SimOptions o;
  o.policy = "custom-flag-without-release";
  o.keep_trace = false;
  absl::StatusOr<SimResult> r = SimulateWithFaults(relaxed, o, registry);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict, Verdict::kWrongPeer) << r->summary;
  EXPECT_THAT(r->summary, HasSubstr("; relaxed memory: rank "));
  EXPECT_THAT(r->summary, HasSubstr("of its workspace out (custom all-reduce tp"));
  EXPECT_THAT(r->summary, HasSubstr("reached it"));
  ASSERT_TRUE(r->details.contains("late_store")) << r->details.dump();
  Scenario v1 = relaxed;
  v1.dispatch.custom_allreduce_v2 = false;
  absl::StatusOr<SimResult> staged = SimulateWithFaults(v1, o, registry);
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ(staged->verdict, Verdict::kMismatch) << staged->summary;
  EXPECT_THAT(staged->summary, HasSubstr("'s staged input (custom all-reduce tp"));
  // The reference, and the mutant under immediate visibility, are clean.
  o.policy = "reference";
  absl::StatusOr<SimResult> reference = SimulateWithFaults(relaxed, o, registry);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(reference->verdict, Verdict::kClean) << reference->summary;
  Scenario immediate = relaxed;
  immediate.memory = MemoryModel::kImmediate;
  o.policy = "custom-flag-without-release";
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    o.seed = seed;
    absl::StatusOr<SimResult> hidden = SimulateWithFaults(immediate, o, registry);
    ASSERT_TRUE(hidden.ok());
    EXPECT_EQ(hidden->verdict, Verdict::kClean) << "seed " << seed << ": " << hidden->summary;
  }
}

}  // namespace
}  // namespace lockstep::faults
