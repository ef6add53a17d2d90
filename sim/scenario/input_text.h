// Text that comes from outside — a file a user named, a string a report will
// carry — checked where it enters (issue 11): a path that is not a regular
// file, or a file too large to be a scenario, is refused before it is read;
// text that is not UTF-8 is refused before it can reach a JSON writer (which
// throws on it).

#ifndef LOCKSTEP_SIM_SCENARIO_INPUT_TEXT_H_
#define LOCKSTEP_SIM_SCENARIO_INPUT_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace lockstep {

// Scenario, hardware and model files: the catalogue's largest is a few KiB,
// and yaml-cpp holds about a hundred bytes per byte of input, so 1 MiB of
// YAML is already some 100 MiB of nodes.
inline constexpr int64_t kMaxScenarioFileBytes = int64_t{1} << 20;
// Reports (replay, shrink): the scenario plus the details of a verdict, which
// at 65 536 ranks list every blocked rank.
inline constexpr int64_t kMaxReportFileBytes = int64_t{64} << 20;

// The contents of the regular file at `path`, at most `max_bytes` long.
// The error names the path and the reason (NotFound, PermissionDenied, else
// FailedPrecondition; never InvalidArgument, which is for bad contents): it cannot be
// opened (with the system's reason: no such file, permission denied, too many
// levels of symbolic links), it is a directory or not a regular file (a
// device, a FIFO, a socket), it is larger than `max_bytes`, or reading failed.
// `what` names the kind of file in the size message ("scenario files").
absl::StatusOr<std::string> ReadInputFile(const std::string& path, int64_t max_bytes,
                                          std::string_view what);

// The code point whose UTF-8 sequence begins at text[i], and the sequence's
// length in bytes; length 0 when the bytes there are not valid UTF-8 (a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate, a
// code point past U+10FFFF).
struct Utf8CodePoint {
  uint32_t value = 0;
  size_t length = 0;
};
Utf8CodePoint DecodeUtf8At(std::string_view text, size_t i);

// The byte offset of the first byte of `text` that does not start a valid
// UTF-8 sequence (DecodeUtf8At's rules), or nullopt when all of it is valid.
std::optional<size_t> FirstInvalidUtf8(std::string_view text);

// Whether `text` is JSON nested at most `max_depth` deep, checked in constant
// memory before it is parsed: a DOM of a hostile file of nested brackets takes
// some 40 bytes per byte of input, and its destructor recurses once per level.
// False too when `text` is not JSON at all.
bool JsonNestedAtMost(std::string_view text, int max_depth);

// "'abc\xff...'" style: `text` with bytes that are not printable ASCII
// written as \xNN, cut to `max_chars`, for a message about bad text.
std::string QuoteBytes(std::string_view text, size_t max_chars = 60);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_INPUT_TEXT_H_
