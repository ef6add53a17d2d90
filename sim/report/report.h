// Reports of a simulated run: self-contained JSON (enough to replay), and the
// text the command line prints.

#ifndef LOCKSTEP_SIM_REPORT_REPORT_H_
#define LOCKSTEP_SIM_REPORT_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "sim/scenario/scenario.h"
#include "sim/sim_result.h"

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

// The first call at which two runs of one scenario (same seed, two
// policies; both with keep_trace) decided differently, rank by rank in call
// order: "rank 2 step 0 layer 1 moe (moe_ep): reference chose nccl,
// sglang-pr30700 chose fused/one_shot"; or a line saying every call was
// decided alike.
std::string FirstDecisionDifference(const SimResult& a, const SimResult& b);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPORT_REPORT_H_
