#include "sim/scenario/input_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace lockstep {
namespace {

// Counts nesting while parsing, keeping nothing.
class DepthCheck : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit DepthCheck(int max_depth) : max_depth_(max_depth) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return ++depth_ <= max_depth_; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return --depth_ >= 0; }
  bool start_array(std::size_t) override { return ++depth_ <= max_depth_; }
  bool end_array() override { return --depth_ >= 0; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  int max_depth_;
  int depth_ = 0;
};

std::string SystemError(int error) { return std::strerror(error); }

// Closes the descriptor on every path out of ReadInputFile.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<std::string> ReadInputFile(const std::string& path, int64_t max_bytes,
                                          std::string_view what) {
  if (path.find('\0') != std::string::npos) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: cannot open file: the path holds a NUL byte", QuoteBytes(path)));
  }
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  const Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) {
    const int error = errno;
    const std::string message =
        absl::StrFormat("%s: cannot open file (%s)", path, SystemError(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES || error == EPERM) return absl::PermissionDeniedError(message);
    return absl::FailedPreconditionError(message);
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: cannot open file (%s)", path, SystemError(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: cannot open file: it is a directory, not a file", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: cannot open file: not a regular file (a device, FIFO or socket); give a file", path));
  }
  auto too_large = [&](std::string_view size) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: the file is %s; %s are limited to %d bytes (%d MiB)", path, size, what,
                        max_bytes, max_bytes >> 20));
  };
  if (st.st_size > max_bytes) {
    return too_large(absl::StrFormat("%d bytes", st.st_size));
  }
  // Read at most one byte past the limit (files under /proc report size 0),
  // growing the buffer from the size the file reports.
  const auto limit = static_cast<size_t>(max_bytes) + 1;
  std::string text;
  text.resize(std::min(limit, static_cast<size_t>(st.st_size) + 1));
  size_t got = 0;
  while (got < limit) {
    if (got == text.size()) text.resize(std::min(limit, std::max<size_t>(2 * got, 4096)));
    const ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::FailedPreconditionError(
          absl::StrFormat("%s: cannot read file (%s)", path, SystemError(errno)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > static_cast<size_t>(max_bytes)) return too_large("larger than that");
  text.resize(got);
  return text;
}

Utf8CodePoint DecodeUtf8At(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  const size_t len = c < 0x80           ? 1
                     : (c >> 5) == 0x6  ? 2
                     : (c >> 4) == 0xe  ? 3
                     : (c >> 3) == 0x1e ? 4
                                        : 0;
  if (len == 0 || i + len > text.size()) return {};
  if (len == 1) return {c, 1};
  uint32_t cp = c & (0xffu >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next >> 6) != 0x2) return {};
    cp = (cp << 6) | (next & 0x3fu);
  }
  // No overlong forms, surrogates or code points past U+10FFFF.
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
    return {};
  }
  return {cp, len};
}

std::optional<size_t> FirstInvalidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = DecodeUtf8At(text, i).length;
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

std::string QuoteBytes(std::string_view text, size_t max_chars) {
  std::string out = "'";
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() > max_chars) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += absl::StrFormat("\\x%02x", c);
    }
  }
  return out + "'";
}

bool JsonNestedAtMost(std::string_view text, int max_depth) {
  DepthCheck depth(max_depth);
  return nlohmann::json::sax_parse(text, &depth);
}

}  // namespace lockstep
