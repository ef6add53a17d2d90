// `lockstep hw --compare`: a hardware run against a simulated run of the same
// scenario and seed. Plain C++ over the runs' results.

#ifndef LOCKSTEP_HW_HW_COMPARE_H_
#define LOCKSTEP_HW_HW_COMPARE_H_

#include <cstddef>
#include <string>
#include <vector>

#include "sim/simulation.h"

namespace lockstep::hw {

// The differences: the verdicts, then every dispatched call (matched by rank,
// group object and the call's index on its coordinator) whose site, backend,
// algorithm or tokens differ, or that only one run made — at most
// `max_differences` calls, then a count. Where both runs stopped (neither is
// clean), only calls both made are compared, and not whether they failed:
// where each run stopped depends on timing. Empty: the runs agree.
std::vector<std::string> CompareRuns(const SimResult& hardware, const SimResult& simulated,
                                     size_t max_differences = 20);

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_HW_COMPARE_H_
