// lockstep check-log: every rank's decision log compared, group by group,
// call by call (sim/report/decision_log.h, docs/DECISION_LOG.md).

#include <iostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "sim/report/decision_log.h"

namespace lockstep::cli {

int RunCheckLog(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string dir, against;
  bool json = false;
  // Compares the decision logs of every rank (rank-<R>.jsonl in DIR, written
  // by `sim --decision-log`, `hw --decision-log` or lockstep.DecisionRecorder).
  // Exit 0: they agree; 1: a divergence; 2: bad input.
  FlagParser flags("lockstep check-log");
  flags.AddPositional("DIR", &dir, "directory of rank-<R>.jsonl decision logs", true);
  flags.AddBool("json", &json, "print the result as JSON");
  flags.AddString("against", &against,
                  "also compare every rank's calls with another run's logs of the same scenario "
                  "(the simulator's against a GPU run's)");
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    err << "lockstep check-log: " << s.message() << "\n" << flags.Usage();
    return kExitUsage;
  }
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  absl::StatusOr<std::vector<RankDecisionLog>> logs = ReadDecisionLogs(dir);
  if (!logs.ok()) {
    err << "lockstep check-log: " << logs.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<DecisionLogCheck> check = CheckDecisionLogs(*logs);
  if (check.ok() && !check->diverged && !against.empty()) {
    absl::StatusOr<std::vector<RankDecisionLog>> theirs = ReadDecisionLogs(against);
    if (!theirs.ok()) {
      err << "lockstep check-log: " << theirs.status().message() << "\n";
      return kExitUsage;
    }
    check = CompareDecisionLogRuns(*logs, *theirs);
  }
  if (!check.ok()) {
    err << "lockstep check-log: " << check.status().message() << "\n";
    return kExitUsage;
  }
  if (json) {
    const nlohmann::json j = {{"diverged", check->diverged}, {"summary", check->summary},
                              {"details", check->details},   {"ranks", logs->size()},
                              {"calls", check->calls},       {"groups", check->groups}};
    out << j.dump(2) << "\n";
  } else {
    out << (check->diverged ? "diverged: " : "agree: ") << check->summary << "\n";
  }
  return check->diverged ? kExitUnexpected : kExitOk;
}

}  // namespace lockstep::cli
