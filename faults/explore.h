// Exploration: many seeds of many scenarios, in parallel, with results that do
// not depend on the number of worker threads; sharded over machines, or run
// for a time budget; and the mutant detection table.

#ifndef LOCKSTEP_FAULTS_EXPLORE_H_
#define LOCKSTEP_FAULTS_EXPLORE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/verdict.h"
#include "sim/simulation.h"

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

// Progress of a running exploration, for a progress line.
struct ExploreProgress {
  size_t done = 0;      // runs finished
  size_t total = 0;     // runs to do; 0 when the exploration runs until its time is up
  size_t failures = 0;  // runs so far whose verdict was not acceptable
  size_t resumed = 0;   // of `done`, the runs kept from before (--resume), not run now
};

// One run, as a result file keeps it and every summary is rendered from.
struct SeedOutcome {
  uint64_t index = 0;   // item k of the exploration's ordered list
  size_t scenario = 0;  // index into the scenarios explored
  uint64_t seed = 0;
  Verdict verdict = Verdict::kClean;
  bool acceptable = true;  // the verdict the scenario (or its swarm faults) allows
  uint64_t trace_hash = 0;
  // Runs whose verdict is not acceptable only (empty otherwise):
  std::string summary;    // the verdict's one-line explanation
  std::string policy;     // the dispatch policy that ran (a mutant's name, say)
  std::string signature;  // FailureSignature: what makes two failures the same bug
};

// The most shards an exploration may have: the CLI's --shard and the
// environment's counts, and the header of a result file, are refused above it
// (lockstep merge lists a missing shard by walking the count).
inline constexpr uint64_t kMaxShards = uint64_t{1} << 20;

struct ExploreOptions {
  uint64_t start = 1;    // first seed
  uint64_t seeds = 100;  // seeds per scenario
  bool swarm = false;    // replace each scenario's faults by the seed's swarm draw
  std::string policy;    // empty: each scenario's own
  std::string schedule = "random";
  // Time-budgeted exploration (budget > 0): instead of seeds [start, start +
  // seeds), random 64-bit seeds drawn from `root_seed` (TimedSeed), run until
  // `budget` has passed (or, with stop_on_failure, the first failure).
  std::chrono::seconds budget{0};
  uint64_t root_seed = 0;
  bool stop_on_failure = false;
  // This run is shard `shard_index` of `shard_count` (at most kMaxShards): it
  // runs the items of the exploration's ordered list (ItemAt) that ShardOfItem
  // gives it, so the shards of one count cover the list exactly once.
  uint64_t shard_index = 0;
  uint64_t shard_count = 1;
  int jobs = 1;
  // Called (from a reporting thread) as runs finish.
  std::function<void(const ExploreProgress&)> progress;
  // Set (from a signal handler) to stop: no run starts after it, and the runs
  // under way finish and are kept. Time-budgeted, as if the time were up;
  // with seeds, the shard's runs that finished are its first ones (runs are
  // claimed in order and each claimed run finishes) and the result says it
  // stopped (ExploreResult::stopped).
  const std::atomic<bool>* stop = nullptr;
  // With seeds: the shard's first runs, done before (a stopped result file,
  // explore --resume). They are kept as they are, and only the rest run.
  std::vector<SeedOutcome> done;
  // With seeds: called from the reporting thread, at most once per
  // `checkpoint_every` and never more often than 50 times the last call took,
  // with the shard's runs finished so far from its first (a prefix that only
  // grows), while runs are still to come. explore --out writes them as a
  // stopped result file, so a shard killed without warning loses at most the
  // runs since.
  std::function<void(std::span<const SeedOutcome>)> checkpoint;
  std::chrono::milliseconds checkpoint_every{60'000};
};

// The exploration's ordered list of (scenario, seed) items. With seeds: item
// k is scenario k / seeds with seed start + k mod seeds (scenario-major, the
// order of the summary). Time-budgeted: item k is scenario k mod S with seed
// TimedSeed(root_seed, k / S), so every round runs each scenario once.
struct ExploreItem {
  size_t scenario = 0;
  uint64_t seed = 0;
};
ExploreItem ItemAt(uint64_t k, size_t num_scenarios, const ExploreOptions& options);
// The seed of round `round` of a time-budgeted exploration.
uint64_t TimedSeed(uint64_t root_seed, uint64_t round);
// How many items an exploration with seeds has (scenarios x seeds), and how
// many of them a shard runs.
uint64_t ExplorationSize(size_t num_scenarios, const ExploreOptions& options);
uint64_t ShardSize(uint64_t total, uint64_t shard_index, uint64_t shard_count);
// The shard item k belongs to. With seeds: k mod shard_count. Time-budgeted,
// whole rounds: round k / S goes to shard (k / S) mod shard_count, so every
// shard runs every scenario, whatever the two counts.
uint64_t ShardOfItem(uint64_t k, size_t num_scenarios, const ExploreOptions& options);
// Item k of the shard's j-th run (its items in increasing order).
uint64_t ShardItem(uint64_t j, size_t num_scenarios, const ExploreOptions& options);

struct ScenarioSummary {
  std::string name;
  std::string path;
  std::array<uint64_t, kNumVerdicts> counts{};
  std::optional<SeedOutcome> first_failure;  // the earliest in item order
};

// Failures of one scenario with one signature: one bug, however many seeds
// hit it.
struct FailureGroup {
  size_t scenario = 0;
  std::string signature;
  uint64_t runs = 0;
  SeedOutcome smallest;  // the failing run with the smallest seed
};

struct ExploreResult {
  std::vector<ScenarioSummary> scenarios;
  std::vector<SeedOutcome> outcomes;  // in item order
  // In the item order of each group's first run.
  std::vector<FailureGroup> failures;
  bool all_acceptable = true;
  // With seeds: stopped (ExploreOptions::stop) before the shard's last run;
  // `outcomes` are its first runs.
  bool stopped = false;
};

// What makes two failures the same bug: the verdict, the detector that gave
// it, the kind of call site (without step and layer), the inputs of the first
// divergent decision that differed between ranks (hangs), and the policy.
// "wrong_peer/contributors @moe policy=no-hybrid-fusion-gate".
std::string FailureSignature(const SimResult& result);

// Counts, first failures and failure groups of `outcomes` (any order; they
// are sorted by item). The one summary explore and merge both render.
ExploreResult SummarizeOutcomes(const std::vector<Scenario>& scenarios,
                                std::vector<SeedOutcome> outcomes);

// Runs this shard's items of the exploration: seeds [start, start + seeds) of
// every scenario, or random seeds until the budget is spent. Identical results
// for any `jobs`: each run is independent and results are collected by item.
absl::StatusOr<ExploreResult> Explore(const std::vector<Scenario>& scenarios,
                                      const ExploreOptions& options,
                                      const PolicyRegistry& registry);

// Keeps the memory a finished run frees in this process for the next run,
// instead of handing it back to the kernel and faulting it in again (glibc:
// a fixed 32 MiB mmap threshold and a 1 GiB trim threshold, where the
// defaults start at 128 KiB). Each of an exploration's runs allocates and
// frees a few MiB (decision records, fiber stacks, provenance); with the
// defaults, 16 jobs on the nvidia-h200 host ran 14-17 % slower per job
// (docs/PERFORMANCE.md). Process-wide, so the `lockstep` command calls it
// once at start and a host that embeds Explore (the Python module) keeps
// its own allocator settings. The process then holds its peak footprint
// until it exits. Does nothing where the C library is not glibc.
void RetainFreedMemoryBetweenRuns();

// The replay command of one outcome.
std::string ReplayCommand(const Scenario& scenario, const SeedOutcome& outcome,
                          const ExploreOptions& options);

// Verdict counts per scenario and failures by signature as text, and as a
// Markdown table (for a pull request comment). Rendered from the result's
// records alone, so a merge of shards renders what one run would.
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
