// A scenario's serving configuration as SGLang 0.5.23 resolves it for one
// replica: the fusion backend (the flag, or the auto-enable by architecture
// and platform), the custom all-reduce's limits under the policy, the
// boundary reduction, the platform. Both hosts (simulator and GPUs) wire
// from it, so they resolve alike.
//
//   absl::StatusOr<ReplicaConfig> config = ResolveReplicaConfig(scenario, layout, policy);
//   if (!config.ok()) ...  // e.g. fusion auto on SM90 across nodes, which SGLang refuses
//   WireRank(config->wiring, layout, policy, tags, rank, faults, runtime, wiring);

#ifndef LOCKSTEP_SIM_REPLICA_REPLICA_CONFIG_H_
#define LOCKSTEP_SIM_REPLICA_REPLICA_CONFIG_H_

#include "absl/status/statusor.h"
#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "dispatch/serving_args.h"
#include "sim/replica/group_wiring.h"
#include "sim/scenario/scenario.h"

namespace lockstep {

struct ReplicaConfig {
  Platform platform;
  ServingArgs args;
  FusionBackend fusion_backend = FusionBackend::kNone;
  BoundaryReduction boundary = BoundaryReduction::kRsRsv;  // resolved
  WiringConfig wiring;
};

// The platform a replica of `layout` runs on: the hardware's SM, and the
// hosts its world spans (gpus_per_node each).
Platform PlatformOf(const HardwareSpec& hardware, const ParallelLayout& layout);

// The serving arguments a scenario's `dispatch:` stands for.
ServingArgs ServingArgsOf(const DispatchSpec& dispatch);

// Resolves everything; InvalidArgument (naming the scenario's file and the
// dispatch key) where SGLang would refuse to start.
absl::StatusOr<ReplicaConfig> ResolveReplicaConfig(const Scenario& scenario,
                                                   const ParallelLayout& layout,
                                                   const DispatchPolicy& policy);

// Whether the scenario runs with a fused backend at all (the backend resolves
// to anything but none); false where it cannot resolve.
bool FusedBackendOn(const Scenario& scenario, const ParallelLayout& layout);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_REPLICA_CONFIG_H_
