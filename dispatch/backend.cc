#include "dispatch/backend.h"

#include "dispatch/custom_launch.h"
#include "dispatch/kernel_shape.h"

namespace lockstep {

std::string_view FusedCapacityRuleName(FusedCapacityRule rule) {
  switch (rule) {
    case FusedCapacityRule::kPerDimension:
      return "per_dimension";
    case FusedCapacityRule::kTrtllm:
      return "trtllm";
    case FusedCapacityRule::kMnnvl:
      return "mnnvl";
  }
  return "?";
}

namespace {

// The workspace's identity predicates: initialised, then world size and exact
// peer set equal to the caller's.
bool WorkspaceMatches(const FusedAgreedState& s, const Workspace& ws, DecisionRecord& r) {
  r.workspace_initialized = ws.initialized;
  if (!r.Check(Predicate::kWorkspaceInitialized, ws.initialized)) return false;
  r.workspace_group = ws.group;
  r.workspace_world_size = ws.world_size;
  r.workspace_generation = ws.generation;
  if (!r.Check(Predicate::kWorkspaceWorldSize, ws.world_size == s.group_world_size)) return false;
  return r.Check(Predicate::kWorkspacePeers, ws.group == s.group);
}

bool PerDimensionFits(const Workspace& ws, const TensorDesc& t, DecisionRecord& r) {
  if (!r.Check(Predicate::kTokensFit, t.tokens() <= ws.capacity.max_tokens)) return false;
  if (!r.Check(Predicate::kHiddenFits, t.hidden() <= ws.capacity.hidden)) return false;
  return r.Check(Predicate::kDtypeMatches, t.dtype == ws.capacity.dtype);
}

// Capacity last: under graph tracing the token dimension is symbolic, and
// every static refusal must short-circuit before it.
bool Fits(const FusedAgreedState& s, const Workspace& ws, const TensorDesc& t, DecisionRecord& r) {
  r.workspace_capacity = ws.capacity;
  switch (s.capacity_rule) {
    case FusedCapacityRule::kPerDimension:
      return PerDimensionFits(ws, t, r);
    case FusedCapacityRule::kMnnvl:
      // flashinfer_comm_fusion.py:977-981 @ 0.5.23 (hidden alignment, checked
      // for every rule by KernelRunsRows), then FlashInfer's
      // is_buffer_size_sufficient (SGLang's fallback: per dimension).
      return PerDimensionFits(ws, t, r);
    case FusedCapacityRule::kTrtllm:
      // flashinfer_comm_fusion.py:1003-1008 @ 0.5.23: total elements.
      if (!r.Check(Predicate::kElementsFit,
                   t.tokens() * t.hidden() <= ws.capacity.max_tokens * ws.capacity.hidden)) {
        return false;
      }
      return r.Check(Predicate::kDtypeMatches, t.dtype == ws.capacity.dtype);
  }
  return false;
}

// Rows of whole 16-byte vectors: what lockstep's kernels need of every
// fused call (dispatch/kernel_shape.h), and what SGLang checks for MNNVL.
bool KernelRunsRows(const TensorDesc& t, DecisionRecord& r) {
  return r.Check(Predicate::kHiddenAligned, RowIsWholeVectors(t.hidden(), DTypeSize(t.dtype)));
}

}  // namespace

bool FusedPredicatesHold(const FusedAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  const TensorDesc& t = call.tensor;
  const Workspace* ws = s.workspace;
  r.hint = ws != nullptr ? ws->kind : WorkspaceKind::kNone;
  r.library_available = s.library_available;
  if (!r.Check(Predicate::kGroupTagged, ws != nullptr)) return false;
  if (!r.Check(Predicate::kLibraryAvailable, s.library_available)) return false;
  if (!r.Check(Predicate::kTwoDimensional, t.ndim == 2)) return false;
  if (!r.Check(Predicate::kContiguous, t.contiguous)) return false;
  if (!WorkspaceMatches(s, *ws, r)) return false;
  if (!KernelRunsRows(t, r)) return false;
  return Fits(s, *ws, t, r);
}

bool FusedNormPredicatesHold(const FusedAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  const TensorDesc& t = call.tensor;
  const Workspace* ws = s.workspace;
  r.hint = ws != nullptr ? ws->kind : WorkspaceKind::kNone;
  r.library_available = s.library_available;
  r.norm_max_tokens = s.norm_max_tokens;
  // flashinfer_ar_fusion_applies (layer_boundary/residual/add_norm.py:144-158).
  if (!r.Check(Predicate::kNormFusionPath, s.norm_path && ws != nullptr)) return false;
  if (!r.Check(Predicate::kNormFusable, call.context.norm_fusable)) return false;
  if (!r.Check(Predicate::kLibraryAvailable, s.library_available)) return false;
  if (!r.Check(Predicate::kTokensInNormRange, t.tokens() > 0 && t.tokens() <= s.norm_max_tokens)) {
    return false;
  }
  // flashinfer_allreduce_residual_rmsnorm (flashinfer_comm_fusion.py:833-923).
  if (!r.Check(Predicate::kTwoDimensional, t.ndim == 2)) return false;
  if (!r.Check(Predicate::kContiguous, t.contiguous)) return false;
  if (!WorkspaceMatches(s, *ws, r)) return false;
  if (!KernelRunsRows(t, r)) return false;
  r.workspace_capacity = ws->capacity;
  return PerDimensionFits(*ws, t, r);
}

CustomV2Config AgreedCustomV2Config(const CustomAgreedState& s) {
  if (s.generation < 2) return CustomV2Config{};
  return CustomV2ConfigFor(s.sm, s.group_world_size, s.max_bytes);
}

bool CustomPredicatesHold(const CustomAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  return CustomPredicatesHold(s, AgreedCustomV2Config(s), call, r);
}

bool CustomPredicatesHold(const CustomAgreedState& s, const CustomV2Config& config,
                          const CallDesc& call, DecisionRecord& r) {
  const TensorDesc& t = call.tensor;
  r.custom_available = s.available;
  r.custom_max_bytes = s.max_bytes;
  r.full_nvlink = s.full_nvlink;
  r.same_node = s.same_node;
  if (!r.Check(Predicate::kCustomAvailable, s.available)) return false;
  if (!r.Check(Predicate::kBytesAligned, t.bytes() % 16 == 0)) return false;
  if (!r.Check(Predicate::kCustomContiguous, t.contiguous)) return false;
  const int w = s.group_world_size;
  const bool served = w > 0 && w < 32 && ((s.world_sizes >> w) & 1u) != 0;
  if (!r.Check(Predicate::kCustomWorldSize, served)) return false;
  const bool linked = s.generation >= 2 ? s.full_nvlink : (w == 2 || s.full_nvlink);
  if (!r.Check(Predicate::kNvlinkOrWorldTwo, linked)) return false;
  if (!r.Check(Predicate::kSameNode, s.same_node)) return false;
  if (s.generation >= 2) {
    // _pick_config returns a config (custom_all_reduce_v2.py:385-398, 401-414).
    const bool graph = call.context.graph_capture && s.graph_inputs;
    r.custom_max_bytes = (graph ? config.graph : config.eager).MaxBytes();
    return r.Check(Predicate::kBytesBelowMax,
                   SelectCustomV2Algorithm(config, t.bytes(), graph) != Algorithm::kNone);
  }
  return r.Check(Predicate::kBytesBelowMax,
                 s.max_inclusive ? t.bytes() <= s.max_bytes : t.bytes() < s.max_bytes);
}

void ConfigureCustomV2Launch(const CustomAgreedState& s, const CustomV2Config& config,
                             const CallDesc& call, DecisionRecord& r) {
  const bool graph = call.context.graph_capture && s.graph_inputs;
  r.algorithm = SelectCustomV2Algorithm(config, call.tensor.bytes(), graph);
  r.blocks = IsCustomPush(r.algorithm) ? config.push_blocks : config.pull_blocks;
  // Only the pull algorithms read registered inputs; a captured push call
  // allocates no graph row (custom_all_reduce_v2.py:476-485).
  r.graph_inputs = graph && IsCustomPull(r.algorithm);
}

}  // namespace lockstep
