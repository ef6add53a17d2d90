// The files lockstep replay and shrink read: a report of one run (lockstep sim
// --report, sim/report/report.h) or the replay bundle of a failure group
// (lockstep explore --out, lockstep merge), which is a report plus the group's
// signature and size. Both are self-contained JSON: the scenario as YAML with
// its hardware, model and faults inline, the seed, policy and schedule, the
// verdict and the trace hash the run gave, and, when recorded, the build of
// lockstep that ran it.
//
// They travel: a bundle written on a cluster's node is replayed on a laptop,
// or attached to a bug report. The reader takes them as untrusted input: a
// truncated, edited or foreign file is InvalidArgument naming the file and
// what is wrong, never an exception or an abort (tests/hostile/reports.yaml;
// tests/fuzz/replay_file_fuzzer.cc).

#ifndef LOCKSTEP_FAULTS_REPLAY_FILE_H_
#define LOCKSTEP_FAULTS_REPLAY_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "faults/explore.h"
#include "nlohmann/json.hpp"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace lockstep::faults {

// A report or replay bundle, read back.
struct ReplayFile {
  Scenario scenario;
  SimOptions options;      // seed, policy and schedule; the rest default
  std::string verdict;     // a verdict lockstep gives ("hang")
  std::string trace_hash;  // "0x" and 16 lowercase hex digits
  // The lockstep that wrote it (empty: not recorded, a report of a lockstep
  // before 2026-12-05 or one written by hand).
  std::string build;
  // A replay bundle: its failure's signature and how many runs of the
  // exploration had it.
  bool bundle = false;
  std::string signature;
  uint64_t runs = 0;
};

// `text`, the contents of the file `path`. InvalidArgument, starting with
// `path`, says what is wrong: not JSON (or nested over 64 deep), a key
// missing or of the wrong type, a verdict or trace hash lockstep does not
// write, a scenario that does not parse (its message), a build string over
// kMaxBuildBytes, a bundle without its signature and size.
absl::StatusOr<ReplayFile> ParseReplayFile(std::string_view text, const std::string& path);

// ParseReplayFile of the file at `path`, read with ReadInputFile (at most
// kMaxReportFileBytes; its errors name the path).
absl::StatusOr<ReplayFile> ReadReplayFile(const std::string& path);

// The replay bundle of a failure group: a self-contained report (the format
// lockstep replay and shrink read) of the group's smallest seed — the
// scenario's YAML with its faults (swarm: the seed's draw) written out, the
// seed, policy and schedule, the verdict and the expected trace hash — plus
// the group's signature and size, and the build of lockstep that ran it.
absl::StatusOr<nlohmann::json> MakeReplayBundle(std::string_view build, const Scenario& scenario,
                                                const ExploreOptions& options,
                                                const FailureGroup& group);
// "failure-001-tp4-ep2-qwen3-h200-seed-1.json" for the `number`th group (from 1).
std::string BundleFileName(size_t number, const Scenario& scenario, const FailureGroup& group);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_REPLAY_FILE_H_
