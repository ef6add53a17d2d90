// The verdicts of a run (DESIGN §3), with their exact names.

#ifndef LOCKSTEP_SIM_SCENARIO_VERDICT_H_
#define LOCKSTEP_SIM_SCENARIO_VERDICT_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace lockstep {

enum class Verdict : uint8_t {
  kClean = 0,   // every rank finished; every reduction right; outputs agree
  kFailStop,    // the job stopped loudly on a fault the design cannot mask
  kHang,        // live ranks wait on each other, or without bound on a dead peer
  kMismatch,    // matched calls whose contracts differ
  kWrongPeer,   // a reduction over the wrong contributor set
  kDivergence,  // ranks disagree bitwise, or a numeric result is out of tolerance
};
inline constexpr int kNumVerdicts = 6;

std::string_view VerdictName(Verdict verdict);
absl::StatusOr<Verdict> ParseVerdict(std::string_view name);

// hang, mismatch, wrong_peer and divergence: failures nobody would notice.
constexpr bool IsSilentFailure(Verdict v) {
  return v == Verdict::kHang || v == Verdict::kMismatch || v == Verdict::kWrongPeer ||
         v == Verdict::kDivergence;
}

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_VERDICT_H_
