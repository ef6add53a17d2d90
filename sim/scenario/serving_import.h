// A deployment becomes a scenario: the flags of `python -m sglang.launch_server`
// (SGLang 0.5.23) or `vllm serve`, read as those programs read them, turned
// into a scenario lockstep simulates — layout, dispatch options, workload and
// the model's shape (from a Hugging Face config.json, or the catalogue by
// name). A flag the program does not have, one given twice, an ambiguous
// abbreviation or a value lockstep cannot represent is an error naming it;
// flags that do not change the all-reduce dispatch are listed, not guessed at.
//
//   ImportOptions o;  o.catalogue = "topologies";
//   absl::StatusOr<ImportedScenario> s =
//       ImportSglangFlags({"--model-path", "deepseek-ai/DeepSeek-V3", "--tp", "8"}, o);
//   // s->scenario_yaml simulates; s->notes says what was assumed or ignored

#ifndef LOCKSTEP_SIM_SCENARIO_SERVING_IMPORT_H_
#define LOCKSTEP_SIM_SCENARIO_SERVING_IMPORT_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/scenario/scenario.h"

namespace lockstep {

struct ImportOptions {
  std::string catalogue;     // topologies/ (hardware/, models/, import/)
  std::string hardware;      // a catalogue hardware name; empty: h200x8 up to 8 ranks
  std::string model_config;  // a Hugging Face config.json; empty: <model path>/config.json
  std::string name;          // the scenario's name; empty: derived from the layout
};

struct ImportedScenario {
  Scenario scenario;
  std::string yaml;  // self-contained (ScenarioToYaml), ParseScenario reads it back
  // What was derived, assumed or left out, one line each ("--mem-fraction-static:
  // not modelled (no effect on the all-reduce dispatch)").
  std::vector<std::string> notes;
};

// `args`: the flags after `python -m sglang.launch_server`. The flag table is
// catalogue/import/sglang-0.5.23-flags.tsv (tools/import/sglang_flags.py).
absl::StatusOr<ImportedScenario> ImportSglangFlags(std::span<const std::string> args,
                                                   const ImportOptions& options);

// `args`: what follows `vllm serve` (the model first, or --model).
absl::StatusOr<ImportedScenario> ImportVllmFlags(std::span<const std::string> args,
                                                 const ImportOptions& options);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_SERVING_IMPORT_H_
