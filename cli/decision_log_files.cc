#include "cli/decision_log_files.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_format.h"
#include "cli/output_file.h"
#include "sim/report/decision_log.h"

namespace lockstep::cli {

absl::Status WriteDecisionLog(const std::string& dir, int rank,
                              const std::vector<nlohmann::json>& log) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: cannot create the decision-log directory: %s", dir, ec.message()));
  }
  const std::string path = (std::filesystem::path(dir) / DecisionLogFileName(rank)).string();
  return WriteOutputFile(path, [&](std::ostream& f) {
    for (const nlohmann::json& line : log) f << line.dump() << "\n";
  });
}

}  // namespace lockstep::cli
