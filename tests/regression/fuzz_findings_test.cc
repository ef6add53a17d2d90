// Inputs the fuzzers (and the work on the catalogue) found failing in code
// outside tests/: tests/fuzz/findings/. Disabled until the fix lands; then
// enable the test and move the files to tests/fuzz/corpus/, where
// `ctest -L fuzz` replays them for good.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario/scenario_yaml.h"
#include "tests/regression/regression_util.h"

namespace lockstep::regression {
namespace {

std::vector<std::string> FindingFiles(const std::string& kind) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::string(LOCKSTEP_SOURCE_DIR) + "/tests/fuzz/findings/" + kind, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// simulate_fuzzer findings: `lockstep sim` gives the scenario's expect.
TEST(FuzzFindingsTest, EverySimulateFindingNowGivesItsExpectOrIsRefused) {
  const std::vector<std::string> files = FindingFiles("simulate");
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    for (const char* seed : {"1", "2", "3"}) {
      std::vector<std::string> args = {"lockstep", "sim",         file,           "--seed",
                                       seed,       "--catalogue", TopologiesDir()};
      std::ostringstream out, err;
      const int code = cli::Main(args, out, err);
      if (code == cli::kExitUsage) {
        // Refused at parse time, naming the file and line.
        EXPECT_THAT(err.str(), ::testing::StartsWith("lockstep sim: " + file + ":")) << err.str();
        continue;
      }
      EXPECT_EQ(code, cli::kExitOk) << file << " seed " << seed << "\n" << out.str() << err.str();
    }
  }
}

// scenario_parser_fuzzer findings: refused with the file named, or written
// back to YAML that reads back and writes the same text.
TEST(FuzzFindingsTest, EveryParserFindingNowRoundTripsOrIsRefused) {
  const std::vector<std::string> files = FindingFiles("parser");
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<Scenario> s = ParseScenario(text.str(), "fuzz.yaml", TopologiesDir());
    if (!s.ok()) {
      EXPECT_THAT(std::string(s.status().message()), ::testing::StartsWith("fuzz.yaml:")) << file;
      continue;
    }
    const std::string yaml = ScenarioToYaml(*s);
    absl::StatusOr<Scenario> back = ParseScenario(yaml, "back.yaml", "");
    ASSERT_TRUE(back.ok()) << file << ": " << back.status();
    EXPECT_EQ(ScenarioToYaml(*back), yaml) << file;
  }
}

}  // namespace
}  // namespace lockstep::regression
