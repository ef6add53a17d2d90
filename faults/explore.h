// Exploration: many seeds of many scenarios, in parallel, with results that do
// not depend on the number of worker threads; and the mutant detection table.

#ifndef LOCKSTEP_FAULTS_EXPLORE_H_
#define LOCKSTEP_FAULTS_EXPLORE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/verdict.h"

namespace lockstep::faults {

// Every scenario file at `path`: the file itself, or every *.yaml under the
// directory (recursively, sorted by path; symbolic links to directories are
// not followed). An entry that cannot be read — a directory that cannot be
// listed, a link that does not resolve, a file that cannot be opened, is not
// a regular file or is too large — is an error, or, when `unreadable` is
// given, is listed there ("PATH: why") and skipped (issue 11: one such entry
// aborted the whole run). A file that reads but does not parse is an error.
absl::StatusOr<std::vector<Scenario>> LoadScenarios(const std::string& path,
                                                    const std::string& catalogue = "",
                                                    std::vector<std::string>* unreadable = nullptr);

struct ExploreOptions {
  uint64_t start = 1;    // first seed
  uint64_t seeds = 100;  // seeds per scenario
  bool swarm = false;    // replace each scenario's faults by the seed's swarm draw
  std::string policy;    // empty: each scenario's own
  std::string schedule = "random";
  int jobs = 1;
  // Called from the calling thread as runs finish (done, total).
  std::function<void(size_t, size_t)> progress;
};

struct SeedOutcome {
  size_t scenario = 0;  // index into the scenarios explored
  uint64_t seed = 0;
  Verdict verdict = Verdict::kClean;
  bool acceptable = true;  // the verdict the scenario (or its swarm faults) allows
  std::string summary;
  std::vector<FaultSpec> faults;  // the faults the run had (swarm: the draw)
  uint64_t trace_hash = 0;
};

struct ScenarioSummary {
  std::string name;
  std::string path;
  std::array<int, kNumVerdicts> counts{};
  std::optional<SeedOutcome> first_failure;
};

struct ExploreResult {
  std::vector<ScenarioSummary> scenarios;
  std::vector<SeedOutcome> outcomes;  // scenario-major, seed order
  bool all_acceptable = true;
};

// Runs seeds [start, start + seeds) of every scenario. Identical results for
// any `jobs`: each run is independent and results are collected by index.
absl::StatusOr<ExploreResult> Explore(const std::vector<Scenario>& scenarios,
                                      const ExploreOptions& options,
                                      const PolicyRegistry& registry);

// The replay command of one outcome.
std::string ReplayCommand(const Scenario& scenario, const SeedOutcome& outcome,
                          const ExploreOptions& options);

// Verdict counts per scenario as text, and as a Markdown table (for a pull
// request comment).
std::string FormatExploreSummary(const std::vector<Scenario>& scenarios,
                                 const ExploreResult& result, const ExploreOptions& options);
std::string FormatExploreMarkdown(const std::vector<Scenario>& scenarios,
                                  const ExploreResult& result, const ExploreOptions& options);

// The mutant detection table: every mutant on every scenario for `seeds`
// seeds. A mutant is detected on a scenario when some seed gives a silent
// failure (hang, mismatch, wrong_peer, divergence).
struct MutantRow {
  std::string mutant;
  std::string source;
  std::vector<std::optional<Verdict>> silent;  // per scenario: the first silent verdict
  bool detected = false;
};
struct MutantTable {
  std::vector<MutantRow> rows;
  int detected = 0;
  double score() const {
    return rows.empty() ? 1.0 : static_cast<double>(detected) / static_cast<double>(rows.size());
  }
};
absl::StatusOr<MutantTable> RunMutants(const std::vector<Scenario>& scenarios, uint64_t seeds,
                                       int jobs, const PolicyRegistry& registry);
std::string FormatMutantTable(const std::vector<Scenario>& scenarios, const MutantTable& table);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_EXPLORE_H_
