#include "sim/simulation.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report/report.h"
#include "sim/sim_run.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::lockstep::testing::CatalogueScenario;
using ::lockstep::testing::ScenarioFromYaml;
using ::testing::HasSubstr;

SimResult Simulated(const Scenario& s, SimOptions o = {}) {
  PolicyRegistry registry;
  absl::StatusOr<SimResult> r = Simulate(s, o, registry);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

TEST(SimulationTest, SameSeedGivesByteIdenticalReports) {
  const Scenario s = CatalogueScenario("tp4-ep2-qwen3-h200");
  SimOptions o;
  o.seed = 42;
  const std::string a = MakeReport(s, o, Simulated(s, o)).dump(2);
  const std::string b = MakeReport(s, o, Simulated(s, o)).dump(2);
  EXPECT_EQ(a, b);
}

TEST(SimulationTest, DifferentSeedsExploreDifferentInterleavings) {
  const Scenario s = CatalogueScenario("tp8-llama3-h200");
  std::set<uint64_t> steps_seen;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SimOptions o;
    o.seed = seed;
    const SimResult r = Simulated(s, o);
    EXPECT_EQ(r.verdict, Verdict::kClean) << "seed " << seed << ": " << r.summary;
    steps_seen.insert(r.trace_hash);
  }
  EXPECT_GT(steps_seen.size(), 1u) << "every seed produced the same trace";
}

TEST(SimulationTest, NumericModeMatchesTheReferenceForEveryDtype) {
  for (const char* dtype : {"bf16", "fp16", "fp32"}) {
    const Scenario s = ScenarioFromYaml(std::string(R"(
name: numeric
hardware: h200x8
parallel: {tp: 4, ep: 2}
model: {name: small, hidden: 64, layers: 2, moe: true}
dispatch: {max_tokens: 64, dtype: )") + dtype +
                                        R"(}
workload: {steps: 2, tokens: [3, 80], data: numeric}
)");
    const SimResult r = Simulated(s);
    EXPECT_EQ(r.verdict, Verdict::kClean) << dtype << ": " << r.summary;
    EXPECT_GT(r.rank_calls, 0u);
  }
}

// The reference design on the layouts of the source: clean.
class CatalogueScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CatalogueScenarioTest, ReferenceGivesTheExpectedVerdict) {
  const Scenario s = CatalogueScenario(GetParam());
  ASSERT_TRUE(s.expect.has_value());
  for (uint64_t seed : {uint64_t{1}, uint64_t{7}, uint64_t{1234}}) {
    SimOptions o;
    o.seed = seed;
    const SimResult r = Simulated(s, o);
    EXPECT_EQ(r.verdict, *s.expect) << "seed " << seed << ": " << r.summary;
  }
}

std::vector<std::string> CatalogueNames() {
  std::vector<std::string> names;
  for (const auto& e :
       std::filesystem::directory_iterator(lockstep::testing::TopologiesDir() + "/scenarios")) {
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Catalogue, CatalogueScenarioTest, ::testing::ValuesIn(CatalogueNames()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace lockstep
