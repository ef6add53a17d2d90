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
}

}  // namespace
}  // namespace lockstep::faults
