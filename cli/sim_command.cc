// lockstep sim: one deterministic simulated run of a scenario.

#include <iostream>

#include "absl/strings/str_format.h"
#include "cli/budget.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/decision_log_files.h"
#include "cli/flags.h"
#include "cli/output_file.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "sim/report/report.h"
#include "sim/run_estimate.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/simulation.h"

namespace lockstep::cli {
namespace {

bool WriteFile(const std::string& path, const std::function<void(std::ostream&)>& write,
               std::ostream& err) {
  if (absl::Status s = WriteOutputFile(path, write); !s.ok()) {
    err << "lockstep sim: " << s.message() << "\n";
    return false;
  }
  return true;
}

}  // namespace

int RunSim(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path;
  std::string catalogue;
  SimOptions options;
  std::string report_path, trace_path, dot_path, decision_log_dir;
  bool json = false;
  bool swarm = false;
  std::string max_memory;
  FlagParser flags("lockstep sim");
  flags.AddPositional("SCENARIO", &path, "scenario YAML file", true);
  flags.AddUint64("seed", &options.seed, "seed of the schedule and data (default 1)");
  flags.AddString("policy", &options.policy, "dispatch policy (default: the scenario's)");
  flags.AddString("report", &report_path, "write the JSON report here");
  flags.AddString("trace", &trace_path, "write a Chrome/Perfetto trace here");
  flags.AddString("decision-log", &decision_log_dir,
                  "write every rank's decision log (rank-<R>.jsonl) into this directory");
  flags.AddString("dot", &dot_path, "write the wait-for graph (Graphviz DOT) here on a hang");
  flags.AddString("catalogue", &catalogue, "catalogue directory (hardware/, models/)");
  flags.AddBool("exact", &options.exact_provenance, "track exact contributor sets throughout");
  flags.AddString("schedule", &options.schedule, "random (default), pct or pct:D");
  flags.AddBool("json", &json, "print the JSON report instead of text");
  flags.AddBool("swarm", &swarm, "replace the scenario's faults by the seed's swarm draw");
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  std::string memory_model;
  flags.AddString("memory", &memory_model,
                  "immediate or relaxed: overrides the scenario's `memory` (relaxed: stores "
                  "reach peers late and out of order, docs/SIMULATOR.md)");
  std::string versus;
  flags.AddString("versus", &versus,
                  "a second policy: run the scenario under both and name the first call they "
                  "decide differently");
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    err << "lockstep sim: " << s.message() << "\n" << flags.Usage();
    return kExitUsage;
  }
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep sim: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<Scenario> scenario = LoadScenarioFile(path, catalogue);
  if (!scenario.ok()) {
    err << "lockstep sim: " << scenario.status().message() << "\n";
    return kExitUsage;
  }
  if (flags.WasSet("memory")) {
    absl::StatusOr<MemoryModel> model = ParseMemoryModel(memory_model);
    if (!model.ok()) {
      err << "lockstep sim: --memory: " << model.status().message() << "\n";
      return kExitUsage;
    }
    scenario->memory = *model;
  }
  if (swarm) {
    scenario = faults::WithSwarmFaults(*scenario, options.seed);
    if (!scenario.ok()) {
      err << "lockstep sim: " << scenario.status().message() << "\n";
      return kExitUsage;
    }
  }
  options.keep_trace = !trace_path.empty() || !versus.empty();
  options.keep_decision_log = !decision_log_dir.empty();
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  if (!swarm) {
    if (absl::Status s = faults::CheckFaultsFire(*scenario, registry, options.policy); !s.ok()) {
      err << "lockstep sim: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario->parallel);
  if (!layout.ok()) {
    err << "lockstep sim: " << layout.status().message() << "\n";
    return kExitUsage;
  }
  if (absl::Status s =
          CheckMemory(path, EstimateRunMemory(*scenario, *layout, options), 1, 0, "", *budget);
      !s.ok()) {
    err << "lockstep sim: " << s.message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<SimResult> result = faults::SimulateWithFaults(*scenario, options, registry);
  if (!result.ok()) {
    err << "lockstep sim: " << result.status().message() << "\n";
    return kExitUsage;
  }
  nlohmann::json report = MakeReport(*scenario, options, *result);
  report["lockstep"]["build"] = ThisBuild();
  if (!report_path.empty() &&
      !WriteFile(
          report_path, [&](std::ostream& f) { f << report.dump(2) << "\n"; }, err)) {
    return kExitUsage;
  }
  if (!trace_path.empty() && !WriteFile(
                                 trace_path,
                                 [&](std::ostream& f) {
                                   Trace::WriteChromeJson(f, result->trace_events, scenario->name,
                                                          *layout);
                                   f << "\n";
                                 },
                                 err)) {
    return kExitUsage;
  }
  for (size_t r = 0; r < result->decision_log.size(); ++r) {
    if (absl::Status s =
            WriteDecisionLog(decision_log_dir, static_cast<int>(r), result->decision_log[r]);
        !s.ok()) {
      err << "lockstep sim: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (!dot_path.empty() && !result->wait_for_dot.empty() &&
      !WriteFile(
          dot_path, [&](std::ostream& f) { f << result->wait_for_dot; }, err)) {
    return kExitUsage;
  }
  if (!versus.empty()) {
    SimOptions other = options;
    other.policy = versus;
    absl::StatusOr<SimResult> theirs = faults::SimulateWithFaults(*scenario, other, registry);
    if (!theirs.ok()) {
      err << "lockstep sim: --versus: " << theirs.status().message() << "\n";
      return kExitUsage;
    }
    if (json) {
      nlohmann::json their_report = MakeReport(*scenario, other, *theirs);
      their_report["lockstep"]["build"] = ThisBuild();
      nlohmann::json both = {{"runs", {report, their_report}},
                             {"difference", FirstDecisionDifference(*result, *theirs)}};
      out << both.dump(2) << "\n";
    } else {
      out << FormatResult(*scenario, options, *result) << "\n"
          << FormatResult(*scenario, other, *theirs) << "\n"
          << FirstDecisionDifference(*result, *theirs) << "\n";
    }
    return AsExpected(*scenario, result->verdict) ? kExitOk : kExitUnexpected;
  }
  if (json) {
    out << report.dump(2) << "\n";
  } else {
    out << FormatResult(*scenario, options, *result);
  }
  return AsExpected(*scenario, result->verdict) ? kExitOk : kExitUnexpected;
}

}  // namespace lockstep::cli
