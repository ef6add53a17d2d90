// Files the user asked lockstep to write (--report, --trace, --dot,
// --markdown, --out): a path that cannot be created or written — a
// directory, a missing folder, a read-only or full disk — is an error that
// names the path and the system's reason, found on close rather than assumed
// (issue 11).

#ifndef LOCKSTEP_CLI_OUTPUT_FILE_H_
#define LOCKSTEP_CLI_OUTPUT_FILE_H_

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace lockstep::cli {

// Creates (or truncates) `path` and lets `write` fill it.
absl::Status WriteOutputFile(const std::string& path,
                             const std::function<void(std::ostream&)>& write);
absl::Status WriteOutputFile(const std::string& path, std::string_view text);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_OUTPUT_FILE_H_
