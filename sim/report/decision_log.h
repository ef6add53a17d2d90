// Decision logs: what each rank decided at every dispatched all-reduce, one
// JSON-lines file per rank (docs/DECISION_LOG.md). lockstep's runs write them
// (`sim --decision-log DIR`, `hw --decision-log DIR`), an engine writes them
// through lockstep.DecisionRecorder (Python), and `lockstep check-log DIR`
// compares every group's members call by call, as the simulator compares
// decision records: the first call where the members of a group disagreed,
// which inputs differed and which ranks took which side, or the first group
// whose call sequences diverge in length or order.
//
//   rank-0.jsonl:
//   {"format":"lockstep-decision-log","version":1,"rank":0,"world":4,"source":"sim",...}
//   {"call":0,"group":"tp","peers":[0,1,2,3],"seq":0,"site":"step 0 embedding",
//    "tokens":1,"hidden":4096,"dtype":"bf16","backend":"fused","algorithm":"one_shot",
//    "inputs":{"group_tagged":true,...,"blocks":1,...}}

#ifndef LOCKSTEP_SIM_REPORT_DECISION_LOG_H_
#define LOCKSTEP_SIM_REPORT_DECISION_LOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/decision.h"
#include "dispatch/group_layout.h"
#include "nlohmann/json.hpp"

namespace lockstep {

inline constexpr std::string_view kDecisionLogFormat = "lockstep-decision-log";
inline constexpr int kDecisionLogVersion = 1;
// A log is refused past these: a rank's file, and one line of it.
inline constexpr int64_t kMaxDecisionLogBytes = int64_t{256} << 20;
inline constexpr size_t kMaxDecisionLogLineBytes = 64 << 10;

// "rank-3.jsonl".
std::string DecisionLogFileName(int rank);

// The first line of a rank's log. `source`: "sim", "hw" or "python";
// `scenario` may be empty (written as null).
nlohmann::json DecisionLogHeader(int rank, int world, std::string_view source,
                                 std::string_view scenario);

// One dispatched call: the rank's `call`-th, on group object `object` of
// `layout`, at `site`, decided as `record` says. Every predicate the
// decision evaluated and every field DecisionFields() names is an input.
nlohmann::json DecisionLogEntry(int64_t call, const ParallelLayout& layout, int object,
                                std::string_view site, const DecisionRecord& record);

// One rank's log, read back.
struct RankDecisionLog {
  struct Call {
    int line = 0;  // in the file, 1-based
    int64_t call = 0;
    std::string group;
    std::vector<int> peers;
    int64_t seq = 0;
    std::string site;
    // What the members of a group must agree on: tokens, hidden, dtype,
    // backend, algorithm and the inputs, by name.
    nlohmann::json decision;
  };
  std::string path;
  int rank = 0;
  int world = 0;
  std::string source;
  std::vector<Call> calls;
};

// Parses one rank's log; errors name `path`, the line and the key.
absl::StatusOr<RankDecisionLog> ParseDecisionLog(std::string_view text, const std::string& path);

// Every rank-*.jsonl under `dir`, in rank order. An empty directory, two
// files of one rank or logs of different world sizes are errors.
absl::StatusOr<std::vector<RankDecisionLog>> ReadDecisionLogs(const std::string& dir);

struct DecisionLogCheck {
  bool diverged = false;
  std::string summary;     // one line: what diverged, or that nothing did
  nlohmann::json details;  // the group, the call, the sides
  int64_t calls = 0;       // calls read, all ranks together
  int64_t groups = 0;      // group instances compared
};

// Compares every group's members call by call. Errors (not divergences): a
// group whose peer has no log.
absl::StatusOr<DecisionLogCheck> CheckDecisionLogs(const std::vector<RankDecisionLog>& logs);

// Compares two runs' logs of the same scenario rank by rank, call by call
// (the simulator's against a GPU run's, say): the first call a rank decided
// differently in `theirs` than in `mine`, or made in one run only. Both
// must hold the same ranks.
absl::StatusOr<DecisionLogCheck> CompareDecisionLogRuns(const std::vector<RankDecisionLog>& mine,
                                                        const std::vector<RankDecisionLog>& theirs);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPORT_DECISION_LOG_H_
