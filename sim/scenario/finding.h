// Findings and the detectors that raise them: the one seam through which
// anything a run finds becomes its verdict, in the simulator and on GPUs.
// Each detector is one row of Detectors(): what it checks, the verdicts it
// gives and where it runs (docs/SIMULATOR.md lists them too). The first
// finding ends a simulated run; the hardware runner merges every rank's by
// Severity() (sim/scenario/verdict.h).

#ifndef LOCKSTEP_SIM_SCENARIO_FINDING_H_
#define LOCKSTEP_SIM_SCENARIO_FINDING_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"
#include "sim/scenario/verdict.h"

namespace lockstep {

enum class Detector : uint8_t {
  kCoverage,             // every output element was written by the reduction
  kMessageLayout,        // each element holds data written for its own offset
  kContributors,         // each reduction covers exactly the ranks the model requires
  kNumericTolerance,     // a numeric result is within tolerance of an fp64 reference
  kBitwiseAgreement,     // members of a reduction got the same bits
  kCollectiveContract,   // NCCL calls matched by sequence number have equal contracts
  kActivationSize,       // a pipeline stage receives the activation size it expects
  kBackendRaised,        // a backend returned an error: the rank raises
  kDeadlock,             // no rank can run and some are blocked (the wait-for graph)
  kDeadRank,             // a rank died and every other rank finished
  kBoundedWait,          // a bounded wait or watchdog expired on GPUs
  kDecisionConsistency,  // GPUs: members' decision fingerprints differ before a call
  kRunnerCapacity,       // GPUs: a call exceeds the hardware runner's buffers
};

struct DetectorInfo {
  Detector detector;
  std::string_view name;
  std::string_view verdicts;  // the verdicts it gives
  std::string_view checks;    // one line: what it checks
  std::string_view where;     // which host runs it, and the file
};

// Every detector, in enum order.
std::span<const DetectorInfo> Detectors();
const DetectorInfo& DetectorOf(Detector detector);

// What ended a run early, or what a completed run found.
struct Finding {
  Verdict verdict = Verdict::kClean;
  std::string summary;     // one line
  nlohmann::json details;  // verdict-specific evidence
  int rank = -1;           // the rank that observed it
  int64_t at_ns = 0;       // virtual time (simulator) or steady-clock time (GPUs)
  Detector detector = Detector::kBackendRaised;
  // A bounded wait or the watchdog ran out: usually the consequence of
  // another rank's failure, not its cause.
  bool timed_out = false;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_FINDING_H_
