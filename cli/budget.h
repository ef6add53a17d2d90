// What a lockstep command may use of the machine (issue 11): a memory budget
// that every simulated run's estimate (sim/run_estimate.h) must fit before it
// starts (--max-memory; default half of physical memory, less under a cgroup
// or address-space limit), and worker threads clamped to the CPUs there are.

#ifndef LOCKSTEP_CLI_BUDGET_H_
#define LOCKSTEP_CLI_BUDGET_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "sim/run_estimate.h"

namespace lockstep::cli {

struct MemoryBudget {
  uint64_t bytes = 0;  // ~0: unlimited
  std::string source;  // "half of the 23 GiB of physical memory", "--max-memory 2G"
};

// The budget `flag` asks for ("512M", "8G", "1.5T", "unlimited"; binary
// units, a B or iB after the letter allowed), or the default when it is
// empty. InvalidArgument names the flag and says what is accepted.
absl::StatusOr<MemoryBudget> ResolveMemoryBudget(std::string_view flag);

// OK when `runs` runs at once, each needing `per_run`, plus `extra` bytes fit
// `budget`. Otherwise InvalidArgument: `what` (the scenario file) needs the
// estimate, more than the budget, and what to turn (the run's largest part,
// or --max-memory).
absl::Status CheckMemory(std::string_view what, const MemoryEstimate& per_run, uint64_t runs,
                         uint64_t extra, std::string_view extra_what, const MemoryBudget& budget);

// How many of `runs` runs of `per_run` (plus `extra`) fit `budget` at once:
// at least 1 when one fits, else 0.
uint64_t RunsThatFit(const MemoryEstimate& per_run, uint64_t runs, uint64_t extra,
                     const MemoryBudget& budget);

// `requested` worker threads clamped to the CPUs of the machine; says so on
// `err` (prefixed by `verb`) when it clamps.
int ClampJobs(int requested, std::string_view verb, std::ostream& err);

// The --max-memory flag's help line.
inline constexpr char kMaxMemoryHelp[] =
    "memory the run may use: 512M, 8G, unlimited (default: half of physical memory)";

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_BUDGET_H_
