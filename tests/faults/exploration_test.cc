// Whole explorations: swarm faults over the catalogue under the reference,
// and every mutant over the whole catalogue (the mutation score). Label
// `long`: the default stage of .ci/run runs them; the sanitizer stage, where
// each run is ~30x slower, skips them (the same code is exercised there by
// the per-kind and per-mutant tests).

#include <string>
#include <vector>

#include "faults/explore.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property_seeds.h"

namespace lockstep::faults {
namespace {

std::string Topologies() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

// The catalogue's fault-free scenarios: the layouts faults are injected into.
std::vector<Scenario> BaseScenarios() {
  absl::StatusOr<std::vector<Scenario>> all = LoadScenarios(Topologies() + "/scenarios");
  EXPECT_TRUE(all.ok()) << all.status();
  std::vector<Scenario> base;
  for (Scenario& s : *all) {
    if (s.faults.empty()) base.push_back(std::move(s));
  }
  return base;
}

// Swarm-explores `base` under the reference policy, with random and PCT
// schedules: every run must be clean or fail_stop.
void ExpectSwarmAcceptable(const std::vector<Scenario>& base, uint64_t seeds) {
  const PolicyRegistry registry = MakePolicyRegistry();
  for (const char* schedule : {"random", "pct:3"}) {
    ExploreOptions o;
    o.seeds = seeds;
    o.swarm = true;
    o.schedule = schedule;
    o.jobs = 2;
    absl::StatusOr<ExploreResult> r = Explore(base, o, registry);
    ASSERT_TRUE(r.ok()) << r.status();
    for (size_t k = 0; k < base.size(); ++k) {
      const ScenarioSummary& s = r->scenarios[k];
      EXPECT_FALSE(s.first_failure.has_value())
          << schedule << " " << s.name << " seed " << s.first_failure->seed << ": "
          << s.first_failure->summary << "\n  " << ReplayCommand(base[k], *s.first_failure, o);
    }
    EXPECT_TRUE(r->all_acceptable);
  }
}

TEST(SwarmPropertyTest, ReferenceNeverFailsSilentlyUnderSwarmFaults) {
  ExpectSwarmAcceptable(BaseScenarios(), 500);
}

// Issue 13: the same swarm with relaxed memory on every scenario — stores
// reach peers late, in pieces and out of order — still gives only clean and
// fail_stop. LOCKSTEP_PROPERTY_SEEDS may lower the seed count.
TEST(SwarmPropertyTest, ReferenceNeverFailsSilentlyUnderSwarmFaultsWithRelaxedMemory) {
  std::vector<Scenario> base = BaseScenarios();
  for (Scenario& s : base) s.memory = MemoryModel::kRelaxed;
  ExpectSwarmAcceptable(base, lockstep::testing::PropertySeeds(200));
}

TEST(MutationScoreTest, EveryMutantIsDetectedAndGivesItsVerdictClass) {
  absl::StatusOr<std::vector<Scenario>> scenarios = LoadScenarios(Topologies() + "/scenarios");
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  const PolicyRegistry registry = MakePolicyRegistry();
  absl::StatusOr<MutantTable> table = RunMutants(*scenarios, 2, 2, registry);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->detected, static_cast<int>(table->rows.size()))
      << FormatMutantTable(*scenarios, *table);
  for (size_t m = 0; m < table->rows.size(); ++m) {
    const MutantInfo& info = AllMutants()[m];
    bool expected_class_seen = false;
    for (const auto& v : table->rows[m].silent) expected_class_seen |= v == info.expected;
    EXPECT_TRUE(expected_class_seen)
        << info.name << " never gave " << VerdictName(info.expected) << "\n"
        << FormatMutantTable(*scenarios, *table);
  }
}

}  // namespace
}  // namespace lockstep::faults
