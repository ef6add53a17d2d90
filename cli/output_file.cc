#include "cli/output_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_format.h"

namespace lockstep::cli {

absl::Status WriteOutputFile(const std::string& path,
                             const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot write %s: it is a directory; give a file name", path));
  }
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot write %s (%s)", path, errno != 0 ? std::strerror(errno) : "cannot create it"));
  }
  // The first failure's errno: a full disk shows while writing, not on close.
  errno = 0;
  write(out);
  int error = out ? 0 : errno;
  out.flush();
  if (error == 0 && !out) error = errno;
  if (out) out.close();
  if (error == 0 && !out) error = errno;
  if (!out) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot write %s (%s)", path, error != 0 ? std::strerror(error) : "write failed"));
  }
  return absl::OkStatus();
}

absl::Status WriteOutputFile(const std::string& path, std::string_view text) {
  return WriteOutputFile(path, [text](std::ostream& out) { out << text; });
}

}  // namespace lockstep::cli
