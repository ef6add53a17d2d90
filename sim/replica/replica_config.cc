#include "sim/replica/replica_config.h"

#include "absl/strings/str_format.h"

namespace lockstep {

Platform PlatformOf(const HardwareSpec& hardware, const ParallelLayout& layout) {
  Platform p;
  p.sm = hardware.sm;
  const int per_node = std::max(1, hardware.gpus_per_node);
  p.nodes = (layout.world_size() + per_node - 1) / per_node;
  return p;
}

ServingArgs ServingArgsOf(const DispatchSpec& d) {
  ServingArgs a;
  a.fusion_backend = d.fused_backend;
  a.disable_custom_all_reduce = !d.custom_allreduce;
  a.custom_all_reduce_v2 = d.custom_allreduce_v2;
  if (d.custom_max_bytes > 0 && d.custom_allreduce_v2) {
    a.custom_all_reduce_v2_max_bytes = d.custom_max_bytes;
  }
  a.boundary_reduction = d.boundary_reduction;
  return a;
}

absl::StatusOr<ReplicaConfig> ResolveReplicaConfig(const Scenario& s, const ParallelLayout& layout,
                                                   const DispatchPolicy& policy) {
  ReplicaConfig c;
  c.platform = PlatformOf(s.hardware, layout);
  c.args = ServingArgsOf(s.dispatch);
  absl::StatusOr<FusionBackend> backend =
      ResolveFusionBackend(c.args, c.platform, s.model.architecture, layout.widths());
  if (!backend.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: dispatch.fused_backend: %s",
                                                      s.path.empty() ? s.name : s.path,
                                                      backend.status().message()));
  }
  c.fusion_backend = *backend;
  c.boundary = ResolveBoundaryReduction(c.args.boundary_reduction, s.model.architecture);
  WiringConfig& w = c.wiring;
  w.fusion_backend = c.fusion_backend;
  w.capacity = WorkspaceCapacity{s.dispatch.max_tokens, s.model.hidden, s.dispatch.dtype};
  w.norm_max_tokens = s.dispatch.max_fused_norm_tokens;
  w.dp_attention = layout.widths().DpAttention();
  w.custom = policy.CustomLimits(c.args, c.platform, s.dispatch.custom_max_bytes);
  return c;
}

bool FusedBackendOn(const Scenario& s, const ParallelLayout& layout) {
  absl::StatusOr<FusionBackend> backend =
      ResolveFusionBackend(ServingArgsOf(s.dispatch), PlatformOf(s.hardware, layout),
                           s.model.architecture, layout.widths());
  return backend.ok() && FusedAllReduceOnlyEnabled(*backend);
}

}  // namespace lockstep
