// Human- and machine-readable descriptions of a parallel layout: its groups,
// the workspaces tagged on them and the post-experts reduction plan.

#ifndef LOCKSTEP_SIM_REPORT_LAYOUT_REPORT_H_
#define LOCKSTEP_SIM_REPORT_LAYOUT_REPORT_H_

#include <string>

#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "nlohmann/json.hpp"

namespace lockstep {

struct LayoutReportOptions {
  // Subgroups printed per group object before "... and N more".
  int max_subgroups = 16;
  // Whether a fused AR + norm backend is configured (tags and gate depend on it).
  bool fused_enabled = true;
};

// Text for `lockstep layout`.
std::string FormatLayout(const ParallelLayout& layout, const DispatchPolicy& policy,
                         const LayoutReportOptions& options = {});

// The lines of FormatLayout where `a` and `b` decide differently ("- a: ..."
// then "+ b: ..."), or a line saying they agree (`lockstep layout --versus`).
std::string FormatLayoutDifferences(const ParallelLayout& layout, const DispatchPolicy& a,
                                    const DispatchPolicy& b,
                                    const LayoutReportOptions& options = {});

// The same as JSON (every subgroup, no truncation).
nlohmann::json LayoutToJson(const ParallelLayout& layout, const DispatchPolicy& policy,
                            const LayoutReportOptions& options = {});

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPORT_LAYOUT_REPORT_H_
