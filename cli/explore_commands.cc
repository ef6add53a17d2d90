// lockstep explore / replay / shrink / mutants / faults: running many seeds,
// reproducing and minimising a failure, and testing lockstep with its mutants.

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <limits>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/budget.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/output_file.h"
#include "faults/explore.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "faults/shrink.h"
#include "sim/report/report.h"
#include "sim/run_estimate.h"
#include "sim/scenario/input_text.h"
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

// Whether `text` is JSON nested at most `max_depth` deep, in constant memory:
// a DOM of a hostile report of nested brackets takes some 40 bytes per byte
// of input before its depth could be checked.
class DepthCheck : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit DepthCheck(int max_depth) : max_depth_(max_depth) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_ <= max_depth_; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth_ >= 0; }
  bool start_array(std::size_t) override { return ++depth_ <= max_depth_; }
  bool end_array() override { return --depth_ >= 0; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  int max_depth_;
  int depth_ = 0;
};

// A report as lockstep sim --report writes it; an edited or truncated one is
// InvalidArgument saying what is wrong, never an exception (issue 11).
absl::StatusOr<LoadedReport> LoadReport(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInputFile(path, kMaxReportFileBytes, "reports");
  if (!text.ok()) return text.status();
  // A report lockstep wrote is nested a few levels deep.
  DepthCheck depth(64);
  if (!nlohmann::json::sax_parse(*text, &depth)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: not a JSON report (truncated, edited or nested over 64 deep? write one with lockstep "
        "sim --report)",
        path));
  }
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: not a JSON report (truncated or edited? write one with lockstep sim --report)", path));
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
  r.verdict = j["verdict"].get<std::string>();
  if (!ParseVerdict(r.verdict).ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: verdict %s is not a verdict lockstep gives", path, QuoteBytes(r.verdict)));
  }
  r.trace_hash = j["trace_hash"].get<std::string>();
  if (r.trace_hash.size() != 18 || !r.trace_hash.starts_with("0x") ||
      r.trace_hash.find_first_not_of("0123456789abcdef", 2) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: trace_hash %s is not a trace hash (0x and 16 hex digits)", path,
                        QuoteBytes(r.trace_hash)));
  }
  absl::StatusOr<Scenario> s =
      ParseScenario(j["scenario"]["yaml"].get<std::string>(), path + " (scenario)", "");
  if (!s.ok()) return s.status();
  r.scenario = *std::move(s);
  if (j["scenario"].contains("path") && j["scenario"]["path"].is_string()) {
    r.scenario.path = j["scenario"]["path"].get<std::string>();
  }
  r.options.seed = j["seed"].get<uint64_t>();
  r.options.policy = j["policy"].get<std::string>();
  if (j.contains("schedule")) {
    if (!j["schedule"].is_string()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: schedule is not a string", path));
    }
    r.options.schedule = j["schedule"].get<std::string>();
  }
  return r;
}

// The memory budget check of one run, or of `runs` concurrent runs of the
// largest of `scenarios` (`extra` for what the command keeps per run). The
// message names `label`, else the scenario's file.
absl::Status CheckRunsFit(const std::vector<Scenario>& scenarios, const SimOptions& options,
                          uint64_t runs, uint64_t extra, std::string_view extra_what,
                          const MemoryBudget& budget, uint64_t* fitting_runs,
                          const std::string& label = "") {
  MemoryEstimate largest;
  std::string largest_path;
  for (const Scenario& s : scenarios) {
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(s.parallel);
    if (!layout.ok()) return layout.status();
    MemoryEstimate e = EstimateRunMemory(s, *layout, options);
    if (e.total > largest.total) {
      largest = std::move(e);
      largest_path = s.path.empty() ? s.name : s.path;
    }
  }
  const uint64_t fit = RunsThatFit(largest, runs, extra, budget);
  if (fitting_runs != nullptr) *fitting_runs = fit;
  return CheckMemory(label.empty() ? largest_path : label, largest,
                     std::max<uint64_t>(1, std::min(fit, runs)), extra, extra_what, budget);
}

}  // namespace

// What explore keeps per run (an outcome: verdict, summary, faults).
constexpr uint64_t kOutcomeBytes = 512;

int RunExplore(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path, catalogue, markdown, max_memory;
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
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "explore", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  if (options.seeds == 0 || options.seeds > 10'000'000 || options.jobs < 1 || options.jobs > 1024) {
    err << "lockstep explore: --seeds must be in [1, 10000000] and --jobs in [1, 1024]\n";
    return kExitUsage;
  }
  // Seeds are start, start + 1, ...: the last must not wrap past 2^64 - 1.
  if (options.start > std::numeric_limits<uint64_t>::max() - (options.seeds - 1)) {
    err << absl::StrFormat(
        "lockstep explore: --start %d with --seeds %d would pass the largest seed, 2^64-1 = %d; "
        "start at %d or lower\n",
        options.start, options.seeds, std::numeric_limits<uint64_t>::max(),
        std::numeric_limits<uint64_t>::max() - (options.seeds - 1));
    return kExitUsage;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep explore: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  options.jobs = ClampJobs(options.jobs, "explore", err);
  std::vector<std::string> unreadable;
  absl::StatusOr<std::vector<Scenario>> scenarios =
      faults::LoadScenarios(path, catalogue, &unreadable);
  if (!scenarios.ok()) {
    err << "lockstep explore: " << scenarios.status().message() << "\n";
    for (const std::string& u : unreadable) err << "  unreadable: " << u << "\n";
    return kExitUsage;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  if (!options.swarm) {
    for (const Scenario& s : *scenarios) {
      if (absl::Status st = faults::CheckFaultsFire(s, registry, options.policy); !st.ok()) {
        err << "lockstep explore: " << st.message() << "\n";
        return kExitUsage;
      }
    }
  }
  {
    SimOptions run_options;
    run_options.keep_trace = false;
    const uint64_t runs = options.seeds * scenarios->size();
    const uint64_t kept = runs > ~uint64_t{0} / kOutcomeBytes ? ~uint64_t{0} : runs * kOutcomeBytes;
    const uint64_t jobs = std::min<uint64_t>(static_cast<uint64_t>(options.jobs), runs);
    uint64_t fit = 0;
    absl::Status st = CheckRunsFit(
        *scenarios, run_options, jobs, kept,
        absl::StrFormat("outcomes of %d runs (--seeds x scenarios)", runs), *budget, &fit);
    if (!st.ok()) {
      err << "lockstep explore: " << st.message() << "\n";
      return kExitUsage;
    }
    if (fit < jobs) {
      err << absl::StrFormat(
          "lockstep explore: %d runs at once would pass the memory budget; using --jobs %d\n", jobs,
          fit);
      options.jobs = static_cast<int>(fit);
    }
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
  absl::StatusOr<faults::ExploreResult> result = faults::Explore(*scenarios, options, registry);
  if (!result.ok()) {
    err << "lockstep explore: " << result.status().message() << "\n";
    return kExitUsage;
  }
  out << faults::FormatExploreSummary(*scenarios, *result, options);
  if (!markdown.empty()) {
    if (absl::Status s =
            WriteOutputFile(markdown, faults::FormatExploreMarkdown(*scenarios, *result, options));
        !s.ok()) {
      err << "lockstep explore: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (!unreadable.empty()) {
    // The readable scenarios ran; the gate still fails closed.
    err << absl::StrFormat(
        "lockstep explore: %d entr%s under %s could not be read and did not run:\n",
        unreadable.size(), unreadable.size() == 1 ? "y" : "ies", path);
    for (const std::string& u : unreadable) err << "  " << u << "\n";
    return kExitUsage;
  }
  return result->all_acceptable ? kExitOk : kExitUnexpected;
}

int RunReplay(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path;
  FlagParser flags("lockstep replay");
  std::string max_memory;
  flags.AddPositional("REPORT", &path, "a JSON report written by lockstep sim --report", true);
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "replay", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep replay: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<LoadedReport> report = LoadReport(path);
  if (!report.ok()) {
    err << "lockstep replay: " << report.status().message() << "\n";
    return kExitUsage;
  }
  if (absl::Status s =
          CheckRunsFit({report->scenario}, report->options, 1, 0, "", *budget, nullptr, path);
      !s.ok()) {
    err << "lockstep replay: " << s.message() << "\n";
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
  std::string max_memory;
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "shrink", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep shrink: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<LoadedReport> report = LoadReport(path);
  if (!report.ok()) {
    err << "lockstep shrink: " << report.status().message() << "\n";
    return kExitUsage;
  }
  // Every candidate is smaller than the report's scenario.
  SimOptions shrink_options = report->options;
  shrink_options.keep_trace = false;
  if (absl::Status s =
          CheckRunsFit({report->scenario}, shrink_options, 1, 0, "", *budget, nullptr, path);
      !s.ok()) {
    err << "lockstep shrink: " << s.message() << "\n";
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
    if (absl::Status s = WriteOutputFile(output, yaml); !s.ok()) {
      err << "lockstep shrink: " << s.message() << "\n";
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
  std::string max_memory;
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "mutants", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  if (seeds > 1000) {
    err << "lockstep mutants: --seeds must be in [1, 1000]\n";
    return kExitUsage;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep mutants: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  jobs = ClampJobs(jobs, "mutants", err);
  absl::StatusOr<std::vector<Scenario>> scenarios = faults::LoadScenarios(path, catalogue);
  if (!scenarios.ok()) {
    err << "lockstep mutants: " << scenarios.status().message() << "\n";
    return kExitUsage;
  }
  {
    SimOptions run_options;
    run_options.keep_trace = false;
    uint64_t fit = 0;
    if (absl::Status s = CheckRunsFit(*scenarios, run_options, static_cast<uint64_t>(jobs), 0, "",
                                      *budget, &fit);
        !s.ok()) {
      err << "lockstep mutants: " << s.message() << "\n";
      return kExitUsage;
    }
    jobs = static_cast<int>(std::min<uint64_t>(fit, static_cast<uint64_t>(jobs)));
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
