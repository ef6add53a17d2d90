// libFuzzer target: lockstep import (sim/scenario/serving_import.h), which
// reads launch flags copied from a deployment's scripts and a Hugging Face
// config.json downloaded with the model — argparse's spellings (abbreviations,
// --flag=value, lists), JSON flag values, numbers of any size. The input is
// text: a first line naming the engine ("vllm", anything else SGLang) and,
// after a space, the catalogue hardware (--hardware), then one argument per line up to a line
// "----", then the config.json (none when empty: the model comes from the catalogue by name). It
// must never crash or hang; a refusal must say what is wrong; a scenario it accepts is one its own
// parser reads back to the same YAML (the file lockstep import writes is the scenario it reports).
// Seed corpus: tests/fuzz/import_corpus.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/scenario/serving_import.h"

namespace {

constexpr std::string_view kSeparator = "\n----\n";

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "import_fuzzer: %s\n%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  __builtin_trap();
}

// One file per process, rewritten for each input.
const std::string& ConfigPath() {
  static const std::string* const kPath =
      new std::string("/tmp/lockstep-import-fuzzer-" + std::to_string(getpid()) + ".json");
  return *kPath;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find(kSeparator);
  const std::string_view flags = input.substr(0, cut);
  const std::string_view config =
      cut == std::string_view::npos ? std::string_view() : input.substr(cut + kSeparator.size());
  std::vector<std::string> args =
      absl::StrSplit(absl::string_view(flags.data(), flags.size()), '\n');
  // StrSplit gives at least one piece.
  const std::string_view first = args.front();
  const size_t space = first.find(' ');
  const bool vllm = first.substr(0, space) == "vllm";
  lockstep::ImportOptions options;
  options.catalogue = LOCKSTEP_SOURCE_DIR "/topologies";
  if (space != std::string_view::npos) options.hardware = std::string(first.substr(space + 1));
  args.erase(args.begin());
  if (!config.empty()) {
    std::ofstream(ConfigPath(), std::ios::binary | std::ios::trunc)
        .write(config.data(), static_cast<std::streamsize>(config.size()));
    options.model_config = ConfigPath();
  }
  const absl::StatusOr<lockstep::ImportedScenario> imported =
      vllm ? lockstep::ImportVllmFlags(args, options) : lockstep::ImportSglangFlags(args, options);
  if (!imported.ok()) {
    if (imported.status().message().empty()) Fail("a refusal without a message", flags);
    return 0;
  }
  // What lockstep import writes is the scenario it reports, and reads back
  // as itself.
  if (lockstep::ScenarioToYaml(imported->scenario) != imported->yaml) {
    Fail("the scenario reported is not the YAML written", imported->yaml);
  }
  const absl::StatusOr<lockstep::Scenario> back =
      lockstep::ParseScenario(imported->yaml, "back.yaml", "");
  if (!back.ok()) {
    Fail("the YAML written does not read back", std::string(back.status().message()));
  }
  if (lockstep::ScenarioToYaml(*back) != imported->yaml) {
    Fail("write, read, write differs", imported->yaml);
  }
  return 0;
}
