// lockstep import sglang|vllm -- FLAGS: a deployment's launch flags as a
// scenario (sim/scenario/serving_import.h, docs/IMPORT.md).

#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/output_file.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/scenario/serving_import.h"

namespace lockstep::cli {

int RunImport(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  // Everything after "--" is the serving program's; before it, lockstep's.
  const auto dash = std::find(args.begin(), args.end(), std::string("--"));
  const std::span<const std::string> ours(args.begin(), dash);
  const std::span<const std::string> theirs =
      dash == args.end() ? std::span<const std::string>()
                         : std::span<const std::string>(dash + 1, args.end());
  std::string engine, out_path;
  ImportOptions options;
  FlagParser flags("lockstep import");
  flags.AddPositional("ENGINE", &engine, "sglang or vllm, then -- and its launch flags", true);
  flags.AddString("hardware", &options.hardware,
                  "catalogue hardware (default h200x8 for up to 8 ranks)");
  flags.AddString("model-config", &options.model_config,
                  "the model's Hugging Face config.json (default: next to the model path, else "
                  "the catalogue model of that name)");
  flags.AddString("name", &options.name, "the scenario's name");
  flags.AddString("out", &out_path, "write the scenario here instead of stdout");
  flags.AddString("catalogue", &options.catalogue,
                  "catalogue directory (hardware/, models/, import/)");
  if (absl::Status s = flags.Parse(ours); !s.ok()) {
    err << "lockstep import: " << s.message() << "\n" << flags.Usage();
    return kExitUsage;
  }
  if (flags.help_requested()) {
    out << flags.Usage()
        << "example: lockstep import sglang -- --model-path deepseek-ai/DeepSeek-V3 --tp 8 "
           "--ep 8 --enable-dp-attention --dp 8\n";
    return kExitOk;
  }
  if (engine != "sglang" && engine != "vllm") {
    err << "lockstep import: '" << engine << "': give sglang or vllm\n";
    return kExitUsage;
  }
  if (dash == args.end()) {
    err << "lockstep import: give the launch flags after --, e.g. lockstep import " << engine
        << " -- --tp 8\n";
    return kExitUsage;
  }
  if (options.catalogue.empty()) options.catalogue = FindCatalogue("");
  absl::StatusOr<ImportedScenario> imported =
      engine == "sglang" ? ImportSglangFlags(theirs, options) : ImportVllmFlags(theirs, options);
  if (!imported.ok()) {
    err << "lockstep import: " << imported.status().message() << "\n";
    return kExitUsage;
  }
  for (const std::string& note : imported->notes) err << "lockstep import: " << note << "\n";
  if (out_path.empty()) {
    out << imported->yaml;
    return kExitOk;
  }
  if (absl::Status s = WriteOutputFile(out_path, imported->yaml); !s.ok()) {
    err << "lockstep import: " << s.message() << "\n";
    return kExitUsage;
  }
  err << "lockstep import: wrote " << out_path << "; run it with lockstep sim " << out_path << "\n";
  return kExitOk;
}

}  // namespace lockstep::cli
