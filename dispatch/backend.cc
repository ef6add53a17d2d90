#include "dispatch/backend.h"

namespace lockstep {

bool FusedPredicatesHold(const FusedAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  const TensorDesc& t = call.tensor;
  const Workspace* ws = s.workspace;
  r.hint = ws != nullptr ? ws->kind : WorkspaceKind::kNone;
  r.library_available = s.library_available;
  if (!r.Check(Predicate::kGroupTagged, ws != nullptr)) return false;
  if (!r.Check(Predicate::kLibraryAvailable, s.library_available)) return false;
  if (!r.Check(Predicate::kTwoDimensional, t.ndim == 2)) return false;
  if (!r.Check(Predicate::kContiguous, t.contiguous)) return false;
  r.workspace_initialized = ws->initialized;
  if (!r.Check(Predicate::kWorkspaceInitialized, ws->initialized)) return false;
  r.workspace_group = ws->group;
  r.workspace_world_size = ws->world_size;
  r.workspace_generation = ws->generation;
  if (!r.Check(Predicate::kWorkspaceWorldSize, ws->world_size == s.group_world_size)) return false;
  if (!r.Check(Predicate::kWorkspacePeers, ws->group == s.group)) return false;
  // Capacity last (see header).
  r.workspace_capacity = ws->capacity;
  if (!r.Check(Predicate::kTokensFit, t.tokens() <= ws->capacity.max_tokens)) return false;
  if (!r.Check(Predicate::kHiddenFits, t.hidden() <= ws->capacity.hidden)) return false;
  return r.Check(Predicate::kDtypeMatches, t.dtype == ws->capacity.dtype);
}

bool CustomPredicatesHold(const CustomAgreedState& s, const CallDesc& call, DecisionRecord& r) {
  const TensorDesc& t = call.tensor;
  r.custom_available = s.available;
  r.custom_max_bytes = s.max_bytes;
  r.full_nvlink = s.full_nvlink;
  r.same_node = s.same_node;
  if (!r.Check(Predicate::kCustomAvailable, s.available)) return false;
  if (!r.Check(Predicate::kBytesAligned, t.bytes() % 16 == 0)) return false;
  if (!r.Check(Predicate::kCustomContiguous, t.contiguous)) return false;
  const int w = s.group_world_size;
  if (!r.Check(Predicate::kCustomWorldSize, w == 2 || w == 4 || w == 6 || w == 8)) return false;
  if (!r.Check(Predicate::kNvlinkOrWorldTwo, w == 2 || s.full_nvlink)) return false;
  if (!r.Check(Predicate::kSameNode, s.same_node)) return false;
  return r.Check(Predicate::kBytesBelowMax, t.bytes() < s.max_bytes);
}

}  // namespace lockstep
