#include "cli/output_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_format.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

// Writes `write`'s output to `path` (truncating it); the first failure's
// reason names `shown` (the path the user gave). `*opened`: whether the
// file could be created.
absl::Status WriteTo(const std::string& path, const std::string& shown,
                     const std::function<void(std::ostream&)>& write, bool* opened = nullptr) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (opened != nullptr) *opened = static_cast<bool>(out);
  if (!out) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot write %s (%s)", shown, errno != 0 ? std::strerror(errno) : "cannot create it"));
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
        "cannot write %s (%s)", shown, error != 0 ? std::strerror(error) : "write failed"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteOutputFile(const std::string& path,
                             const std::function<void(std::ostream&)>& write) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot write %s: it is a directory; give a file name", path));
  }
  // A device or a pipe (nothing to replace), or a symbolic link (whose
  // target the user means): written in place.
  if ((fs::exists(status) && !fs::is_regular_file(status)) ||
      fs::is_symlink(fs::symlink_status(path, ec))) {
    return WriteTo(path, path, write);
  }
  // Beside the file, so the rename stays on one file system; hidden, and
  // named for this process, so that shards writing into one folder at once
  // do not share one.
  const fs::path target(path);
  const std::string temporary =
      (target.parent_path() / absl::StrFormat(".%s.%d.tmp", target.filename().string(), getpid()))
          .string();
  bool opened = false;
  absl::Status written;
  try {
    written = WriteTo(temporary, path, write, &opened);
  } catch (...) {
    std::remove(temporary.c_str());
    throw;
  }
  if (absl::Status s = written; !s.ok()) {
    std::remove(temporary.c_str());
    // No temporary file here (a folder this process may not create files
    // in, though it may write the file itself): in place, as before.
    return opened ? s : WriteTo(path, path, write);
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(temporary.c_str());
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot write %s (%s)", path, std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::Status WriteOutputFile(const std::string& path, std::string_view text) {
  return WriteOutputFile(path, [text](std::ostream& out) { out << text; });
}

absl::Status CheckOutputPath(const std::string& flag, const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %s: it is a directory; give a file name", flag, path));
  }
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) return absl::OkStatus();
  const fs::path parent = fs::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  if (!fs::is_directory(folder, ec)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s %s: the folder %s does not exist; create it first", flag, path, folder));
  }
  if (access(folder.c_str(), W_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s %s: cannot write in %s (%s)", flag, path,
                                                      folder, std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status PrepareOutputDir(const std::string& flag, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %s: cannot create the directory (%s)", flag, dir, ec.message()));
  }
  if (access(dir.c_str(), W_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %s: cannot write in it (%s)", flag, dir, std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace lockstep::cli
