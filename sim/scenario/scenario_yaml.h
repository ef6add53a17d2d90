// Scenario files (YAML, version 1) and the catalogue of hardware and models
// they name. Every error names the file, the line and the key, and says what
// is accepted. Schema: topologies/README.md.

#ifndef LOCKSTEP_SIM_SCENARIO_SCENARIO_YAML_H_
#define LOCKSTEP_SIM_SCENARIO_SCENARIO_YAML_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sim/scenario/scenario.h"

namespace lockstep {

// The catalogue directory for a scenario file: the nearest directory at or
// above the file's that holds `hardware/` and `models/`; else the
// topologies/ folder of the source tree lockstep was built from.
std::string FindCatalogue(const std::string& scenario_path);

// Reads and parses a scenario file. `catalogue` overrides FindCatalogue.
absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path,
                                          const std::string& catalogue = "");

// Parses scenario YAML text; `path` is used in messages only.
absl::StatusOr<Scenario> ParseScenario(std::string_view text, const std::string& path,
                                       const std::string& catalogue);

absl::StatusOr<HardwareSpec> LoadHardwareFile(const std::string& path);
absl::StatusOr<ModelSpec> LoadModelFile(const std::string& path);

// YAML text for `scenario` that ParseScenario reads back to an equal
// scenario, with hardware and model written inline (self-contained).
std::string ScenarioToYaml(const Scenario& scenario);

// The memory model's name ("immediate", "relaxed") and its inverse, for the
// scenario key `memory` and the --memory flags; InvalidArgument says what to
// write instead.
std::string_view MemoryModelName(MemoryModel model);
absl::StatusOr<MemoryModel> ParseMemoryModel(std::string_view name);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_SCENARIO_YAML_H_
