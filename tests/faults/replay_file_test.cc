#include "faults/replay_file.h"

#include <string>

#include "faults/mutants.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report/report.h"
#include "sim/scenario/scenario_yaml.h"
#include "tests/catalogue_scenarios.h"

namespace lockstep::faults {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Scenario Load(const std::string& relative) { return testing::LoadCatalogueScenario(relative); }

TEST(ReplayFileTest, AReportReadsBackAsTheRunItRecords) {
  const Scenario scenario = Load("faults/tp2-pcie-lost-write.yaml");
  SimOptions options;
  options.seed = 3;
  options.schedule = "pct:2";
  const absl::StatusOr<SimResult> run = SimulateWithFaults(scenario, options, MakePolicyRegistry());
  ASSERT_TRUE(run.ok()) << run.status();

  const absl::StatusOr<ReplayFile> file =
      ParseReplayFile(MakeReport(scenario, options, *run).dump(2), "r.json");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(ScenarioToYaml(file->scenario), ScenarioToYaml(scenario));
  EXPECT_EQ(file->scenario.path, scenario.path);
  EXPECT_EQ(file->options.seed, 3u);
  EXPECT_EQ(file->options.schedule, "pct:2");
  EXPECT_EQ(file->options.policy, run->policy);
  EXPECT_EQ(file->verdict, VerdictName(run->verdict));
  EXPECT_EQ(file->trace_hash, HexHash(run->trace_hash));
  EXPECT_FALSE(file->bundle);
  EXPECT_EQ(file->build, "");  // lockstep sim adds it; MakeReport does not

  // And it replays to what it recorded.
  const absl::StatusOr<SimResult> again =
      SimulateWithFaults(file->scenario, file->options, MakePolicyRegistry());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(HexHash(again->trace_hash), file->trace_hash);
}

TEST(ReplayFileTest, ABundleReadsBackWithItsGroupAndBuild) {
  const Scenario scenario = Load("tp2-qwen3-pcie.yaml");
  ExploreOptions options;
  options.schedule = "pct:5";
  FailureGroup group;
  group.signature = "hang at tp all-reduce";
  group.runs = 17;
  group.smallest.seed = 9;
  group.smallest.verdict = Verdict::kHang;
  group.smallest.trace_hash = 0x0123456789abcdefull;
  group.smallest.policy = "sum-from-own-rank";
  const absl::StatusOr<nlohmann::json> bundle =
      MakeReplayBundle("0.1.0 (git 0123456789ab)", scenario, options, group);
  ASSERT_TRUE(bundle.ok()) << bundle.status();

  const absl::StatusOr<ReplayFile> file = ParseReplayFile(bundle->dump(2), "b.json");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_TRUE(file->bundle);
  EXPECT_EQ(file->signature, "hang at tp all-reduce");
  EXPECT_EQ(file->runs, 17u);
  EXPECT_EQ(file->build, "0.1.0 (git 0123456789ab)");
  EXPECT_EQ(file->options.seed, 9u);
  EXPECT_EQ(file->options.policy, "sum-from-own-rank");
  EXPECT_EQ(file->options.schedule, "pct:5");
  EXPECT_EQ(file->verdict, "hang");
  EXPECT_EQ(file->trace_hash, "0x0123456789abcdef");
  EXPECT_EQ(ScenarioToYaml(file->scenario), ScenarioToYaml(scenario));
}

TEST(ReplayFileTest, RefusalsStartWithThePathAndSayWhatIsWrong) {
  const struct {
    std::string text;
    std::string says;
  } cases[] = {
      {"", "not a JSON report"},
      {"[1, 2]", "not a JSON report"},
      {std::string(80, '[') + std::string(80, ']'), "nested over 64 deep"},
      {R"({"scenario": {"yaml": "x"}, "seed": 1, "policy": "reference", "verdict": "clean"})",
       "report has no 'trace_hash'"},
      {R"({"scenario": {"yaml": "x"}, "seed": -1, "policy": "reference", "verdict": "clean",
           "trace_hash": "0x0000000000000000"})",
       "report fields have the wrong types"},
      {R"({"scenario": {"yaml": "x"}, "seed": 1, "policy": "reference", "verdict": "hung",
           "trace_hash": "0x0000000000000000"})",
       "verdict 'hung' is not a verdict lockstep gives"},
      {R"({"scenario": {"yaml": "x"}, "seed": 1, "policy": "reference", "verdict": "clean",
           "trace_hash": "0x00000000000000zz"})",
       "is not a trace hash"},
      {R"({"scenario": {"yaml": "name: [x"}, "seed": 1, "policy": "reference",
           "verdict": "clean", "trace_hash": "0x0000000000000000"})",
       "(scenario):"},
  };
  for (const auto& c : cases) {
    const absl::StatusOr<ReplayFile> file = ParseReplayFile(c.text, "dir/r.json");
    ASSERT_FALSE(file.ok()) << c.text;
    EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(file.status().message()), StartsWith("dir/r.json")) << c.text;
    EXPECT_THAT(std::string(file.status().message()), HasSubstr(c.says)) << c.text;
  }
}

TEST(ReplayFileTest, ABundleWithoutItsGroupIsRefused) {
  const Scenario scenario = Load("tp2-qwen3-pcie.yaml");
  FailureGroup group;
  group.runs = 2;
  absl::StatusOr<nlohmann::json> bundle = MakeReplayBundle("b", scenario, ExploreOptions{}, group);
  ASSERT_TRUE(bundle.ok()) << bundle.status();
  bundle->erase("runs");
  const absl::StatusOr<ReplayFile> file = ParseReplayFile(bundle->dump(), "b.json");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()),
              HasSubstr("b.json: replay bundle without signature (a string) and runs"));
}

TEST(ReplayFileTest, AMissingFileIsNamed) {
  const absl::StatusOr<ReplayFile> file = ReadReplayFile("/nonexistent/r.json");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(std::string(file.status().message()), HasSubstr("/nonexistent/r.json"));
}

}  // namespace
}  // namespace lockstep::faults
