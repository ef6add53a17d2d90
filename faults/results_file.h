// The result files of an exploration (lockstep explore --out DIR). The replay
// bundles of its failures: faults/replay_file.h.
//
// One file per shard, "shard-0003-of-0007.jsonl", in JSON lines (keys written sorted):
//
//   {"lockstep_explore_results":2,"shard":{"index":3,"count":7},"exploration":{...}}
//   {"i":3,"scenario":"tp8-llama3-h200","seed":4,"verdict":"clean","acceptable":true,
//    "trace_hash":"0x..."}
//   {"i":10,...,"acceptable":false,"trace_hash":"0x...","policy":"...","signature":"...",
//    "summary":"..."}
//   {"end":{"runs":2}}
//
// The header records the exploration — every scenario as the YAML it ran (hardware
// and model inline) with its name and path, every option that changes what
// runs (seeds, start, swarm, policy, schedule; or the budget, root seed and
// stop-on-failure of --for), and the entries of the scenario directory that
// could not be read ("unreadable", only when there are some) — so lockstep
// merge can refuse files of another
// exploration and render, from the records alone, the summary one unsharded run
// gives. A run line is one SeedOutcome; the end line says the shard finished.

#ifndef LOCKSTEP_FAULTS_RESULTS_FILE_H_
#define LOCKSTEP_FAULTS_RESULTS_FILE_H_

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "faults/explore.h"
#include "nlohmann/json.hpp"
#include "sim/scenario/scenario.h"

namespace lockstep::faults {

// 2: a --for shard takes whole rounds (ShardOfItem); format 1's --for shards
// took items k mod N, and merge refuses to mix the two.
// 3: the header names the build of lockstep that wrote the file (`build`),
// and merge refuses shards of different builds.
inline constexpr int kResultsFormat = 3;
// The longest `build` a header may give ("0.1.0 (git 225ea9e1a2b3, modified
// 0123abcd)" is 40).
inline constexpr size_t kMaxBuildBytes = 256;

// "shard-0003-of-0007.jsonl".
std::string ShardFileName(uint64_t shard_index, uint64_t shard_count);
// Whether `name` (a file name, no directory) is one ShardFileName gives.
bool IsShardFileName(const std::string& name);

// Entries of the explored directory that could not be read. They did not
// run, and the exploration fails closed for them (exit 2), merged or not.
struct Unreadable {
  std::string under;                 // the directory explored
  std::vector<std::string> entries;  // "path: reason", as LoadScenarios gives them
};
// "2 entries under DIR could not be read and did not run:\n  a\n  b\n".
std::string UnreadableMessage(const Unreadable& unreadable);

// The header's record of an exploration: equal for every shard of one.
nlohmann::json ExplorationJson(const std::vector<Scenario>& scenarios,
                               const ExploreOptions& options, const Unreadable& unreadable = {});

// What differs between two headers' explorations ("seeds '6' vs '5'"), for a
// message.
std::string ExplorationDifference(const nlohmann::json& a, const nlohmann::json& b);

// The result file of one shard's run of an exploration (options.shard_index
// and shard_count name the shard; `result` is what Explore gave it; `build`
// names the lockstep that ran it, cli::ThisBuild()).
void WriteResultFile(std::ostream& out, const std::vector<Scenario>& scenarios,
                     const ExploreOptions& options, const ExploreResult& result,
                     std::string_view build, const Unreadable& unreadable = {});

// One result file, read back.
struct ShardFile {
  std::string path;
  uint64_t shard_index = 0;
  uint64_t shard_count = 1;
  std::string build;  // the lockstep that wrote it
  // With seeds: stopped before its last run (a signal, or a checkpoint of a
  // shard still running or killed), holding its first runs; expected_runs
  // is how many the shard has.
  bool stopped = false;
  uint64_t expected_runs = 0;
  nlohmann::json exploration;       // the header's, as written
  std::vector<Scenario> scenarios;  // parsed from it, with the paths they had
  ExploreOptions options;           // the exploration's options and this shard
  Unreadable unreadable;            // entries that did not run
  std::vector<SeedOutcome> outcomes;
};

// Reads a result file. Anything that is not one lockstep wrote — garbage,
// a truncated file (no end line), a record of another shard or exploration,
// a line too long — is InvalidArgument naming the file and line and what is
// wrong; a file that cannot be read names the system's reason.
absl::StatusOr<ShardFile> ReadResultFile(const std::string& path);
// The same, from `in`, naming it `path` in messages.
absl::StatusOr<ShardFile> ReadResultFile(std::istream& in, const std::string& path);

// The shards of one exploration, combined. InvalidArgument when they belong
// to different explorations (naming two files and what differs), when
// different builds of lockstep wrote them (their trace hashes need not
// compare), and when shards are missing or duplicated (listing them and what
// to do).
struct MergedExploration {
  std::string build;  // the lockstep that ran every shard
  std::vector<Scenario> scenarios;
  ExploreOptions options;  // shard 0 of 1: the unsharded exploration
  ExploreResult result;
  Unreadable unreadable;  // the exploration's unreadable entries (every shard has the same)
};
absl::StatusOr<MergedExploration> MergeShards(std::vector<ShardFile> shards);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_RESULTS_FILE_H_
