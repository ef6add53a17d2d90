// Writing decision logs (docs/DECISION_LOG.md) into the directory a user named
// with --decision-log: one rank-<R>.jsonl per rank.

#ifndef LOCKSTEP_CLI_DECISION_LOG_FILES_H_
#define LOCKSTEP_CLI_DECISION_LOG_FILES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace lockstep::cli {

// Creates `dir` (and its parents) if needed and writes `log` (a header line,
// then entries) as rank `rank`'s file in it.
absl::Status WriteDecisionLog(const std::string& dir, int rank,
                              const std::vector<nlohmann::json>& log);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_DECISION_LOG_FILES_H_
