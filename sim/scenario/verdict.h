// The verdicts of a run (docs/SIMULATOR.md, "Verdicts"), with their exact names.

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

// How bad a verdict is, for choosing the one that stands for a run whose
// ranks found several (the hardware runner merges every rank's finding):
// clean < fail_stop < mismatch < hang < divergence < wrong_peer. A silent
// wrong result outranks a silent hang, which outranks a loud stop.
constexpr int Severity(Verdict v) {
  switch (v) {
    case Verdict::kClean:
      return 0;
    case Verdict::kFailStop:
      return 1;
    case Verdict::kMismatch:
      return 2;
    case Verdict::kHang:
      return 3;
    case Verdict::kDivergence:
      return 4;
    case Verdict::kWrongPeer:
      return 5;
  }
  return 0;
}

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_VERDICT_H_
