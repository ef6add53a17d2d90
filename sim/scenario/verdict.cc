#include "sim/scenario/verdict.h"

#include "absl/strings/str_format.h"

namespace lockstep {

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kClean:
      return "clean";
    case Verdict::kFailStop:
      return "fail_stop";
    case Verdict::kHang:
      return "hang";
    case Verdict::kMismatch:
      return "mismatch";
    case Verdict::kWrongPeer:
      return "wrong_peer";
    case Verdict::kDivergence:
      return "divergence";
  }
  return "?";
}

absl::StatusOr<Verdict> ParseVerdict(std::string_view name) {
  for (int i = 0; i < kNumVerdicts; ++i) {
    const auto v = static_cast<Verdict>(i);
    if (VerdictName(v) == name) return v;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown verdict '%s': use clean, fail_stop, hang, mismatch, wrong_peer or divergence",
      name));
}

}  // namespace lockstep
