// What `lockstep hw` would run, without running it (--dry-run): the ranks and
// their GPUs, the group objects and their communicators, the fusion
// workspaces and their size, and the backend the dispatch core picks at every
// site of the first step. Plain C++: it needs no GPU, MPI or NCCL.

#ifndef LOCKSTEP_HW_HW_PLAN_H_
#define LOCKSTEP_HW_HW_PLAN_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "dispatch/policy.h"
#include "sim/scenario/scenario.h"

namespace lockstep::hw {

// The plan. Placement is the launcher's default (rank r on node
// r / gpus_per_node, GPU r % gpus_per_node); the per-site backends come from
// a simulated run of `seed` under the scenario's policy (or `policy`).
absl::StatusOr<std::string> DescribeHwPlan(const Scenario& scenario, const std::string& policy,
                                           uint64_t seed, const PolicyRegistry& registry);

}  // namespace lockstep::hw

#endif  // LOCKSTEP_HW_HW_PLAN_H_
