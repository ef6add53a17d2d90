// Files the user asked lockstep to write (--report, --trace, --dot,
// --markdown, --out): a path that cannot be created or written — a
// directory, a missing folder, a read-only or full disk — is an error that
// names the path and the system's reason, found on close rather than assumed
// (issue 11). A regular file is written whole or not at all: into a
// temporary file beside it, renamed over it once complete, so a process
// killed while writing leaves the old file or none, never half of one.

#ifndef LOCKSTEP_CLI_OUTPUT_FILE_H_
#define LOCKSTEP_CLI_OUTPUT_FILE_H_

#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace lockstep::cli {

// Creates (or replaces) `path` and lets `write` fill it. A path that exists
// and is not a regular file (/dev/stdout, a pipe) is written in place. With
// `sync`, the file is on disk before it takes the name (fsync): a machine
// that crashes leaves the old file or the new one (a shard's results; not
// for every decision-log file, whose thousands of syncs would cost seconds).
absl::Status WriteOutputFile(const std::string& path,
                             const std::function<void(std::ostream&)>& write, bool sync = false);
absl::Status WriteOutputFile(const std::string& path, std::string_view text);

// Whether `path` could be written, checked before a long run rather than
// after it: not a directory, in a folder that exists and this process may
// write in. `flag` names it in the message ("--markdown").
absl::Status CheckOutputPath(const std::string& flag, const std::string& path);
// Creates folder `dir` (and its parents) and checks this process may write
// in it.
absl::Status PrepareOutputDir(const std::string& flag, const std::string& dir);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_OUTPUT_FILE_H_
