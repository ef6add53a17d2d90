// lockstep explore / replay / shrink / mutants / faults: running many seeds,
// reproducing and minimising a failure, and testing lockstep with its mutants.

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "faults/explore.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "faults/shrink.h"
#include "sim/report/report.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep::cli {
namespace {

bool StderrIsTerminal(const std::ostream& err) { return &err == &std::cerr && isatty(2) != 0; }

int Usage(std::ostream& err, std::string_view verb, const absl::Status& s, const FlagParser& f) {
  err << "lockstep " << verb << ": " << s.message() << "\n" << f.Usage();
  return kExitUsage;
}

struct LoadedReport {
  Scenario scenario;
  SimOptions options;
  std::string verdict;
  std::string trace_hash;
};

absl::StatusOr<LoadedReport> LoadReport(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrFormat("%s: cannot open the report", path));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: not a JSON report", path));
  }
  for (const char* key : {"scenario", "seed", "policy", "verdict", "trace_hash"}) {
    if (!j.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: report has no '%s' (written by lockstep sim --report?)", path, key));
    }
  }
  if (!j["scenario"].is_object() || !j["scenario"].contains("yaml") ||
      !j["scenario"]["yaml"].is_string() || !j["seed"].is_number_unsigned() ||
      !j["policy"].is_string() || !j["verdict"].is_string() || !j["trace_hash"].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: report fields have the wrong types", path));
  }
  LoadedReport r;
  absl::StatusOr<Scenario> s =
      ParseScenario(j["scenario"]["yaml"].get<std::string>(), path + " (scenario)", "");
  if (!s.ok()) return s.status();
  r.scenario = *std::move(s);
  if (j["scenario"].contains("path") && j["scenario"]["path"].is_string()) {
    r.scenario.path = j["scenario"]["path"].get<std::string>();
  }
  r.options.seed = j["seed"].get<uint64_t>();
  r.options.policy = j["policy"].get<std::string>();
  if (j.contains("schedule") && j["schedule"].is_string()) {
    r.options.schedule = j["schedule"].get<std::string>();
  }
  r.verdict = j["verdict"].get<std::string>();
  r.trace_hash = j["trace_hash"].get<std::string>();
  return r;
}

}  // namespace

int RunExplore(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path, catalogue, markdown;
  faults::ExploreOptions options;
  FlagParser flags("lockstep explore");
  flags.AddPositional("SCENARIO|DIR", &path, "a scenario file, or a directory of them", true);
  flags.AddUint64("seeds", &options.seeds, "seeds per scenario (default 100)");
  flags.AddUint64("start", &options.start, "first seed (default 1)");
  flags.AddBool("swarm", &options.swarm, "replace faults by each seed's swarm draw");
  flags.AddString("policy", &options.policy, "dispatch policy (default: each scenario's)");
  flags.AddString("schedule", &options.schedule, "random (default), pct or pct:D");
  flags.AddInt("jobs", &options.jobs, "worker threads (results do not depend on it)");
  flags.AddString("catalogue", &catalogue, "catalogue directory (hardware/, models/)");
  flags.AddString("markdown", &markdown, "also write the summary as a Markdown table here");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "explore", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  if (options.seeds == 0 || options.seeds > 10'000'000 || options.jobs < 1 || options.jobs > 1024) {
    err << "lockstep explore: --seeds must be in [1, 10000000] and --jobs in [1, 1024]\n";
    return kExitUsage;
  }
  absl::StatusOr<std::vector<Scenario>> scenarios = faults::LoadScenarios(path, catalogue);
  if (!scenarios.ok()) {
    err << "lockstep explore: " << scenarios.status().message() << "\n";
    return kExitUsage;
  }
  if (StderrIsTerminal(err)) {
    options.progress = [&err](size_t done, size_t total) {
      const int width = 40;
      const int filled = static_cast<int>(width * done / std::max<size_t>(total, 1));
      err << absl::StrFormat("\r[%s%s] %d/%d runs", std::string(static_cast<size_t>(filled), '#'),
                             std::string(static_cast<size_t>(width - filled), ' '), done, total)
          << (done == total ? "\n" : "") << std::flush;
    };
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  absl::StatusOr<faults::ExploreResult> result = faults::Explore(*scenarios, options, registry);
  if (!result.ok()) {
    err << "lockstep explore: " << result.status().message() << "\n";
    return kExitUsage;
  }
  out << faults::FormatExploreSummary(*scenarios, *result, options);
  if (!markdown.empty()) {
    std::ofstream md(markdown);
    md << faults::FormatExploreMarkdown(*scenarios, *result, options);
    if (!md) {
      err << "lockstep explore: cannot write " << markdown << "\n";
      return kExitUsage;
    }
  }
  return result->all_acceptable ? kExitOk : kExitUnexpected;
}

int RunReplay(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path;
  FlagParser flags("lockstep replay");
  flags.AddPositional("REPORT", &path, "a JSON report written by lockstep sim --report", true);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "replay", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  absl::StatusOr<LoadedReport> report = LoadReport(path);
  if (!report.ok()) {
    err << "lockstep replay: " << report.status().message() << "\n";
    return kExitUsage;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  absl::StatusOr<SimResult> r =
      faults::SimulateWithFaults(report->scenario, report->options, registry);
  if (!r.ok()) {
    err << "lockstep replay: " << r.status().message() << "\n";
    return kExitUsage;
  }
  const std::string verdict(VerdictName(r->verdict));
  const std::string hash = HexHash(r->trace_hash);
  const bool same = verdict == report->verdict && hash == report->trace_hash;
  out << absl::StrFormat("report:  %s, trace hash %s\nreplayed: %s, trace hash %s\n%s\n",
                         report->verdict, report->trace_hash, verdict, hash,
                         same ? "reproduced" : "DIFFERENT: the run did not reproduce");
  return same ? kExitOk : kExitUnexpected;
}

int RunShrink(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path, output;
  int max_runs = 600;
  FlagParser flags("lockstep shrink");
  flags.AddPositional("REPORT", &path, "a JSON report of a failing run (lockstep sim --report)",
                      true);
  flags.AddString("out", &output, "write the shrunk scenario here (default: print it)");
  flags.AddInt("max-runs", &max_runs, "simulations to spend at most (default 600)");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "shrink", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  absl::StatusOr<LoadedReport> report = LoadReport(path);
  if (!report.ok()) {
    err << "lockstep shrink: " << report.status().message() << "\n";
    return kExitUsage;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  absl::StatusOr<faults::ShrinkResult> shrunk =
      faults::Shrink(report->scenario, report->options, registry, std::max(1, max_runs));
  if (!shrunk.ok()) {
    err << "lockstep shrink: " << shrunk.status().message() << "\n";
    return shrunk.status().code() == absl::StatusCode::kFailedPrecondition ? kExitUnexpected
                                                                           : kExitUsage;
  }
  const std::string yaml = ScenarioToYaml(shrunk->scenario);
  err << absl::StrFormat("shrunk %s\n  from %s\n  to   %s\n  in %d runs, keeping %s (seed %d)\n",
                         report->scenario.name, faults::ScenarioSize(report->scenario),
                         faults::ScenarioSize(shrunk->scenario), shrunk->runs,
                         VerdictName(shrunk->verdict), shrunk->seed);
  for (const std::string& step : shrunk->reductions) err << "  - " << step << "\n";
  if (output.empty()) {
    out << yaml;
  } else {
    std::ofstream f(output);
    f << yaml;
    if (!f) {
      err << "lockstep shrink: cannot write " << output << "\n";
      return kExitUsage;
    }
    err << "wrote " << output << "\n";
  }
  return kExitOk;
}

int RunMutants(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path = LOCKSTEP_TOPOLOGIES_SCENARIOS, catalogue;
  uint64_t seeds = 2;
  int jobs = 1;
  FlagParser flags("lockstep mutants");
  flags.AddPositional("DIR", &path, "scenarios to run every mutant on (default: the catalogue)",
                      false);
  flags.AddUint64("seeds", &seeds, "seeds per mutant and scenario (default 2)");
  flags.AddInt("jobs", &jobs, "worker threads");
  flags.AddString("catalogue", &catalogue, "catalogue directory (hardware/, models/)");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "mutants", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  absl::StatusOr<std::vector<Scenario>> scenarios = faults::LoadScenarios(path, catalogue);
  if (!scenarios.ok()) {
    err << "lockstep mutants: " << scenarios.status().message() << "\n";
    return kExitUsage;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  absl::StatusOr<faults::MutantTable> table =
      faults::RunMutants(*scenarios, std::max<uint64_t>(seeds, 1), std::max(jobs, 1), registry);
  if (!table.ok()) {
    err << "lockstep mutants: " << table.status().message() << "\n";
    return kExitUsage;
  }
  out << faults::FormatMutantTable(*scenarios, *table);
  return table->detected == static_cast<int>(table->rows.size()) ? kExitOk : kExitUnexpected;
}

int RunFaults(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  FlagParser flags("lockstep faults");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "faults", s, flags);
  out << "fault kinds (outcome the reference design must give; stage; keys besides ranks; "
         "gpu = the hardware runner injects it):\n";
  for (const faults::FaultKindInfo& k : faults::AllFaultKinds()) {
    std::vector<std::string> keys;
    for (faults::FaultKey key : k.keys) keys.emplace_back(faults::FaultKeyName(key));
    for (const faults::FaultParam& p : k.params) keys.emplace_back(p.name);
    out << absl::StrFormat("  %-30s %-9s %-11s %-3s %-22s %s\n", k.name, VerdictName(k.outcome),
                           faults::FaultStageName(k.stage), k.gpu_injectable ? "gpu" : "",
                           keys.empty() ? "-" : absl::StrJoin(keys, ","), k.summary);
  }
  out << "\nmutants (known-bad policies, --policy NAME):\n";
  for (const faults::MutantInfo& m : faults::AllMutants()) {
    out << absl::StrFormat("  %-28s %-10s %s [%s]\n", m.name, VerdictName(m.expected), m.summary,
                           m.source);
  }
  return kExitOk;
}

}  // namespace lockstep::cli
