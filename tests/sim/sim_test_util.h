// Helpers for simulator tests: scenarios built in code or loaded from the
// catalogue in the source tree.

#ifndef LOCKSTEP_TESTS_SIM_SIM_TEST_UTIL_H_
#define LOCKSTEP_TESTS_SIM_SIM_TEST_UTIL_H_

#include <string>

#include "gtest/gtest.h"
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

}  // namespace lockstep::testing

#endif  // LOCKSTEP_TESTS_SIM_SIM_TEST_UTIL_H_
