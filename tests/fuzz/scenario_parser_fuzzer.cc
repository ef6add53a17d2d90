// libFuzzer target: the scenario parser (sim/scenario_yaml.h) on arbitrary
// text. It must never crash; what it accepts must write back to YAML that it
// reads back to the same scenario; what it refuses must be named by the file.
// Seed corpus: the catalogue (topologies/scenarios) and tests/fuzz/corpus.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "sim/scenario/scenario_yaml.h"

namespace {

constexpr char kFile[] = "fuzz.yaml";

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "scenario_parser_fuzzer: %s\n%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<lockstep::Scenario> scenario =
      lockstep::ParseScenario(text, kFile, LOCKSTEP_SOURCE_DIR "/topologies");
  if (!scenario.ok()) {
    // Every refusal names the file it refuses (and, after it, line and key).
    const std::string message(scenario.status().message());
    if (!message.starts_with(std::string(kFile) + ":")) {
      Fail("a refusal does not name the file", message);
    }
    return 0;
  }
  // Accepted input is self-contained once written back (hardware and model
  // inline): it reads back, and writing it again gives the same text.
  const std::string yaml = lockstep::ScenarioToYaml(*scenario);
  const absl::StatusOr<lockstep::Scenario> back = lockstep::ParseScenario(yaml, "back.yaml", "");
  if (!back.ok()) {
    Fail("ScenarioToYaml wrote what ParseScenario refuses", std::string(back.status().message()));
  }
  if (lockstep::ScenarioToYaml(*back) != yaml) Fail("write, read, write differs", yaml);
  return 0;
}
