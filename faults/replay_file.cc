#include "faults/replay_file.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "faults/results_file.h"
#include "faults/runner.h"
#include "sim/report/report.h"
#include "sim/scenario/input_text.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/scenario/verdict.h"

namespace lockstep::faults {

absl::StatusOr<ReplayFile> ParseReplayFile(std::string_view text, const std::string& path) {
  // A report lockstep wrote is nested a few levels deep.
  if (!JsonNestedAtMost(text, 64)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: not a JSON report (truncated, edited or nested over 64 deep? write one with lockstep "
        "sim --report)",
        path));
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
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
  ReplayFile r;
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
  if (j.contains("lockstep") && j["lockstep"].is_object() && j["lockstep"].contains("build")) {
    const nlohmann::json& build = j["lockstep"]["build"];
    if (!build.is_string() || build.get_ref<const std::string&>().size() > kMaxBuildBytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: lockstep.build is not a build of lockstep (a string of at most %d bytes)", path,
          kMaxBuildBytes));
    }
    r.build = build.get<std::string>();
  }
  if (j.contains("lockstep") && j["lockstep"].is_object() &&
      j["lockstep"].contains("replay_bundle")) {
    if (!j.contains("signature") || !j["signature"].is_string() || !j.contains("runs") ||
        !j["runs"].is_number_unsigned()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: replay bundle without signature (a string) and runs (an integer); write one with "
          "lockstep explore --out DIR or lockstep merge",
          path));
    }
    r.bundle = true;
    r.signature = j["signature"].get<std::string>();
    r.runs = j["runs"].get<uint64_t>();
  }
  return r;
}

absl::StatusOr<ReplayFile> ReadReplayFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadInputFile(path, kMaxReportFileBytes, "reports");
  if (!text.ok()) return text.status();
  return ParseReplayFile(*text, path);
}

absl::StatusOr<nlohmann::json> MakeReplayBundle(std::string_view build, const Scenario& scenario,
                                                const ExploreOptions& options,
                                                const FailureGroup& group) {
  const SeedOutcome& run = group.smallest;
  absl::StatusOr<Scenario> ran =
      options.swarm ? WithSwarmFaults(scenario, run.seed) : absl::StatusOr<Scenario>(scenario);
  if (!ran.ok()) return ran.status();
  nlohmann::json b;
  b["lockstep"] = {{"report_format", kReportFormat},
                   {"tool", "lockstep explore"},
                   {"replay_bundle", 1},
                   {"build", build}};
  b["scenario"] = {{"name", ran->name}, {"path", ran->path}, {"yaml", ScenarioToYaml(*ran)}};
  b["seed"] = run.seed;
  b["policy"] = run.policy;
  b["schedule"] = options.schedule;
  b["verdict"] = std::string(VerdictName(run.verdict));
  b["summary"] = run.summary;
  b["trace_hash"] = HexHash(run.trace_hash);
  b["signature"] = group.signature;
  b["runs"] = group.runs;
  return b;
}

std::string BundleFileName(size_t number, const Scenario& scenario, const FailureGroup& group) {
  std::string name = scenario.name.substr(0, 64);
  for (char& c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (!keep) c = '_';
  }
  return absl::StrFormat("failure-%03d-%s-seed-%d.json", number, name, group.smallest.seed);
}

}  // namespace lockstep::faults
