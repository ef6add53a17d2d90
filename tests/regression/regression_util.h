// Helpers of the regression suites: the catalogue of the source tree, and
// running its scenarios under the reference design or a mutant.

#ifndef LOCKSTEP_TESTS_REGRESSION_REGRESSION_UTIL_H_
#define LOCKSTEP_TESTS_REGRESSION_REGRESSION_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/simulation.h"
#include "tests/property_seeds.h"

namespace lockstep::regression {

inline std::string TopologiesDir() { return LOCKSTEP_SOURCE_DIR "/topologies"; }
inline std::string ScenariosDir() { return TopologiesDir() + "/scenarios"; }

// Every scenario file of the catalogue, relative to topologies/scenarios/,
// without ".yaml" ("faults/tp8-lost-write"), sorted.
inline std::vector<std::string> CatalogueScenarioNames() {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::recursive_directory_iterator(ScenariosDir(), ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".yaml") continue;
    fs::path rel = fs::relative(entry.path(), ScenariosDir(), ec);
    rel.replace_extension();
    names.push_back(rel.generic_string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline std::string ScenarioPath(std::string_view name) {
  return absl::StrFormat("%s/%s.yaml", ScenariosDir(), name);
}

// A GoogleTest-safe name for a catalogue scenario ("faults_tp8_lost_write").
inline std::string TestNameOf(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) c = '_';
  }
  return out;
}

inline absl::StatusOr<Scenario> LoadCatalogueScenario(std::string_view name) {
  return LoadScenarioFile(ScenarioPath(name), TopologiesDir());
}

inline const PolicyRegistry& Registry() {
  static const PolicyRegistry* const kRegistry = new PolicyRegistry(faults::MakePolicyRegistry());
  return *kRegistry;
}

// One run of `scenario` with its declared faults, without keeping the trace
// unless asked.
inline absl::StatusOr<SimResult> RunScenario(const Scenario& scenario, std::string_view policy,
                                             uint64_t seed, bool keep_trace = false) {
  SimOptions options;
  options.seed = seed;
  options.policy = std::string(policy);
  options.keep_trace = keep_trace;
  return faults::SimulateWithFaults(scenario, options, Registry());
}

// The command that replays one run from the repository root.
inline std::string ReplayCommand(std::string_view name, std::string_view policy, uint64_t seed) {
  return absl::StrFormat(
      "build/bin/lockstep sim topologies/scenarios/%s.yaml --seed %d --policy %s", name, seed,
      policy);
}

// Seeds 1..kSeeds of every regression run.
inline constexpr uint64_t kSeeds = 6;

struct SilentRun {
  uint64_t seed = 0;
  SimResult result;
};

// The first seed in 1..seeds whose run of `name` under `policy` is a silent
// failure, or nullopt. Fails the test when the scenario cannot run.
inline std::optional<SilentRun> FirstSilentFailure(std::string_view name, std::string_view policy,
                                                   uint64_t seeds = kSeeds) {
  absl::StatusOr<Scenario> scenario = LoadCatalogueScenario(name);
  EXPECT_TRUE(scenario.ok()) << scenario.status();
  if (!scenario.ok()) return std::nullopt;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    absl::StatusOr<SimResult> r = RunScenario(*scenario, policy, seed);
    EXPECT_TRUE(r.ok()) << name << " under " << policy << ": " << r.status();
    if (!r.ok()) return std::nullopt;
    if (IsSilentFailure(r->verdict)) return SilentRun{seed, *std::move(r)};
  }
  return std::nullopt;
}

// The reference gives the scenario's `expect` on seeds 1..kSeeds.
inline void ExpectReferenceHolds(std::string_view name) {
  SCOPED_TRACE(name);
  absl::StatusOr<Scenario> s = LoadCatalogueScenario(name);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->expect.has_value());
  ASSERT_FALSE(IsSilentFailure(*s->expect));
  for (uint64_t seed = 1; seed <= testing::PropertySeeds(kSeeds); ++seed) {
    absl::StatusOr<SimResult> r = RunScenario(*s, "reference", seed);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->verdict, *s->expect) << "seed " << seed << ": " << r->summary
                                      << "\n  replay: " << ReplayCommand(name, "reference", seed);
  }
}

// Some seed of 1..kSeeds gives `verdict` under `mutant`, and its explanation
// matches `explains`. Returns the explanation.
template <typename Matcher>
std::string ExpectMutantCaught(std::string_view name, std::string_view mutant, Verdict verdict,
                               Matcher explains) {
  SCOPED_TRACE(absl::StrFormat("%s under %s", name, mutant));
  std::optional<SilentRun> caught = FirstSilentFailure(name, mutant);
  EXPECT_TRUE(caught.has_value()) << "the bug went unnoticed: no seed of 1-" << kSeeds
                                  << " gave a silent verdict";
  if (!caught) return "";
  EXPECT_EQ(caught->result.verdict, verdict)
      << caught->result.summary << "\n  replay: " << ReplayCommand(name, mutant, caught->seed);
  EXPECT_THAT(caught->result.summary, explains)
      << "  replay: " << ReplayCommand(name, mutant, caught->seed);
  return caught->result.summary;
}

}  // namespace lockstep::regression

#endif  // LOCKSTEP_TESTS_REGRESSION_REGRESSION_UTIL_H_
