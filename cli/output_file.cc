#include "cli/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ext/stdio_filebuf.h>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "absl/strings/str_format.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;

// Lets `write` fill `out` and flushes it; the first failure's errno (-1
// where none was set), 0 when all went well. A full disk shows while
// writing, not on close.
int WriteAndFlush(std::ostream& out, const std::function<void(std::ostream&)>& write) {
  errno = 0;
  write(out);
  int error = out ? 0 : errno;
  out.flush();
  if (error == 0 && !out) error = errno;
  return error == 0 && !out ? -1 : error;
}

// Writes `write`'s output to `path` (truncating it); the first failure's
// reason names `shown` (the path the user gave).
absl::Status WriteTo(const std::string& path, const std::string& shown,
                     const std::function<void(std::ostream&)>& write) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot write %s (%s)", shown, errno != 0 ? std::strerror(errno) : "cannot create it"));
  }
  int error = WriteAndFlush(out, write);
  if (out) out.close();
  if (error == 0 && !out) error = errno != 0 ? errno : -1;
  if (error != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot write %s (%s)", shown, error > 0 ? std::strerror(error) : "write failed"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteOutputFile(const std::string& path,
                             const std::function<void(std::ostream&)>& write, bool sync) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot write %s: it is a directory; give a file name", path));
  }
  // Written in place: a device or a pipe (nothing to replace), a symbolic
  // link (whose target the user means), a file with other names (hard
  // links) or another owner, which a new file would not keep.
  struct stat existing = {};
  const bool exists = stat(path.c_str(), &existing) == 0;
  if ((fs::exists(status) && !fs::is_regular_file(status)) ||
      fs::is_symlink(fs::symlink_status(path, ec)) ||
      (exists && (existing.st_nlink > 1 || existing.st_uid != geteuid()))) {
    return WriteTo(path, path, write);
  }
  // Beside the file, so the rename stays on one file system; hidden, named
  // at random and created exclusively (never through a link planted at its
  // name); with the mode the file has, or a new file gets.
  const fs::path target(path);
  std::string name =
      (target.parent_path() / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(name.data());
  // No file can be created beside it (a folder this process may not add to,
  // though it may write the file): in place, as before.
  if (fd < 0) return WriteTo(path, path, write);
  const std::string temporary = name;
  mode_t mode = 0;
  if (exists) {
    mode = existing.st_mode & 07777;
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  fchmod(fd, mode);
  int error = 0;
  {
    __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out | std::ios::binary);
    std::ostream out(&buffer);
    try {
      error = WriteAndFlush(out, write);
    } catch (...) {
      std::remove(temporary.c_str());
      throw;
    }
    // On disk before it takes the name: a crash leaves the old file or the new.
    if (error == 0 && sync && fsync(fd) != 0) error = errno;
    if (buffer.close() == nullptr && error == 0) error = errno != 0 ? errno : -1;
  }
  if (error != 0) {
    std::remove(temporary.c_str());
    return absl::InvalidArgumentError(absl::StrFormat(
        "cannot write %s (%s)", path, error > 0 ? std::strerror(error) : "write failed"));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    std::remove(temporary.c_str());
    // A file bind-mounted into a container cannot be replaced: in place.
    if (rename_error == EBUSY || rename_error == EXDEV || rename_error == EPERM) {
      return WriteTo(path, path, write);
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot write %s (%s)", path, std::strerror(rename_error)));
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
  if (fs::exists(path, ec) || fs::is_symlink(fs::symlink_status(path, ec))) {
    // A file there (or a link to one, or a device): written in place if its
    // folder takes no new file.
    if (access(path.c_str(), W_OK) != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s %s: cannot write it (%s)", flag, path, std::strerror(errno)));
    }
    return absl::OkStatus();
  }
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
