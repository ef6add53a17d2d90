// Helpers for simulator tests: scenarios built in code or loaded from the
// catalogue in the source tree.

#ifndef LOCKSTEP_TESTS_SIM_SIM_TEST_UTIL_H_
#define LOCKSTEP_TESTS_SIM_SIM_TEST_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "sim/memory/sim_context.h"
#include "sim/runtime/scheduler.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/simulation.h"

namespace lockstep::testing {

inline std::string TopologiesDir() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

// Parses `yaml` against the source tree's catalogue; fails the test on error.
inline Scenario ScenarioFromYaml(const std::string& yaml) {
  absl::StatusOr<Scenario> s = ParseScenario(yaml, "test.yaml", TopologiesDir());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Scenario{};
}

inline Scenario CatalogueScenario(const std::string& name) {
  absl::StatusOr<Scenario> s =
      LoadScenarioFile(TopologiesDir() + "/scenarios/" + name + ".yaml", TopologiesDir());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Scenario{};
}

// A scenario, its layout and a run context over them, for tests that call
// the simulator's data and memory functions directly, with no rank running.
// The context refers to the other two, so the three live and move together.
struct TestRunContext {
  Scenario scenario;
  std::unique_ptr<ParallelLayout> layout;
  std::unique_ptr<SimContext> ctx;
};

// The context of `yaml` (parsed as ScenarioFromYaml does) under the random
// schedule, without a trace; nullptr, with the test failed, when the scenario
// does not parse or its layout does not build.
inline std::unique_ptr<TestRunContext> MakeTestRunContext(const std::string& yaml,
                                                          uint64_t run_seed,
                                                          bool exact_provenance) {
  auto run = std::make_unique<TestRunContext>();
  absl::StatusOr<Scenario> s = ParseScenario(yaml, "test.yaml", TopologiesDir());
  if (!s.ok()) {
    ADD_FAILURE() << s.status();
    return nullptr;
  }
  run->scenario = *std::move(s);
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(run->scenario.parallel);
  if (!layout.ok()) {
    ADD_FAILURE() << layout.status();
    return nullptr;
  }
  run->layout = std::make_unique<ParallelLayout>(*std::move(layout));
  run->ctx = std::make_unique<SimContext>(run->scenario, *run->layout, run_seed, exact_provenance,
                                          MakeRandomSchedule(), /*keep_trace=*/false);
  return run;
}

// A run context of one TP group of four H200s and a tiny dense model (hidden
// 64, one layer, one step of one token), for tests of the memory model's
// functions on a few ranks; `name` names the scenario.
inline std::unique_ptr<TestRunContext> MakeTp4RunContext(const std::string& name, uint64_t run_seed,
                                                         bool exact_provenance) {
  return MakeTestRunContext("name: " + name + R"(
hardware: h200x8
parallel: {tp: 4}
model: {name: tiny, hidden: 64, layers: 1}
workload: {steps: 1, tokens: [1]}
)",
                            run_seed, exact_provenance);
}

}  // namespace lockstep::testing

#endif  // LOCKSTEP_TESTS_SIM_SIM_TEST_UTIL_H_
