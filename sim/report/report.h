// Reports of a simulated run: self-contained JSON (enough to replay), and the
// text the command line prints.

#ifndef LOCKSTEP_SIM_REPORT_REPORT_H_
#define LOCKSTEP_SIM_REPORT_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "sim/scenario/scenario.h"
#include "sim/simulation.h"

namespace lockstep {

inline constexpr int kReportFormat = 1;

// Whether `verdict` is what `scenario` expects: its `expect`, or, without
// one, clean or fail_stop (the outcomes a correct design may give).
bool AsExpected(const Scenario& scenario, Verdict verdict);

nlohmann::json MakeReport(const Scenario& scenario, const SimOptions& options,
                          const SimResult& result);

// Human-readable lines for the terminal.
std::string FormatResult(const Scenario& scenario, const SimOptions& options,
                         const SimResult& result);

std::string HexHash(uint64_t hash);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPORT_REPORT_H_
