// What a simulated run will need in memory, estimated before it starts, so
// that a run too large for the machine is refused with the estimate and the
// knob to turn instead of growing until it is killed (issue 11). The terms
// and their constants are measured (docs/LIMITS.md); the estimate is meant to
// be above the peak resident size of the run it describes.

#ifndef LOCKSTEP_SIM_RUN_ESTIMATE_H_
#define LOCKSTEP_SIM_RUN_ESTIMATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/group_layout.h"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace lockstep {

struct MemoryEstimate {
  struct Part {
    std::string what;  // "fused workspaces (largest group 16384 ranks; grows with its square)"
    uint64_t bytes = 0;
  };
  std::vector<Part> parts;  // largest first
  uint64_t total = 0;       // saturates at 2^64 - 1

  // "37.2 GiB (fused workspaces ... 33.9 GiB, fiber stacks ... 1.0 GiB, ...)".
  std::string Describe(size_t max_parts = 3) const;
};

// The peak memory of one Simulate() of `scenario` with `options` (its trace
// and decision records, exact provenance, numeric data), faults included:
// fiber stacks and per-rank state, the group workspaces and communicators
// (quadratic in a group's size), records per call, numeric buffers.
MemoryEstimate EstimateRunMemory(const Scenario& scenario, const ParallelLayout& layout,
                                 const SimOptions& options);

// "1.5 GiB", "640 MiB", "12 KiB".
std::string FormatBytes(uint64_t bytes);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_RUN_ESTIMATE_H_
