// The catalogue of the source tree (topologies/), for tests that load its
// scenarios. Needs LOCKSTEP_SOURCE_DIR (tests/CMakeLists.txt defines it).

#ifndef LOCKSTEP_TESTS_CATALOGUE_SCENARIOS_H_
#define LOCKSTEP_TESTS_CATALOGUE_SCENARIOS_H_

#include <string>

#include "gtest/gtest.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep::testing {

// topologies/ (hardware/, models/, scenarios/).
inline std::string Topologies() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

// topologies/scenarios/<relative>; a scenario that does not load fails the
// test and gives an empty one.
inline Scenario LoadCatalogueScenario(const std::string& relative) {
  absl::StatusOr<Scenario> s =
      LoadScenarioFile(Topologies() + "/scenarios/" + relative, Topologies());
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Scenario{};
}

}  // namespace lockstep::testing

#endif  // LOCKSTEP_TESTS_CATALOGUE_SCENARIOS_H_
