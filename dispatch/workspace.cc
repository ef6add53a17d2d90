#include "dispatch/workspace.h"

namespace lockstep {

std::string_view WorkspaceKindName(WorkspaceKind kind) {
  switch (kind) {
    case WorkspaceKind::kAttnTp:
      return "attn_tp";
    case WorkspaceKind::kMoe:
      return "moe";
    case WorkspaceKind::kNone:
      break;
  }
  return "none";
}

GroupRole MoeTagRole(const ParallelWidths& widths) {
  return widths.moe_ep > 1 ? GroupRole::kMoeEp : GroupRole::kMoeTp;
}

WorkspaceTags TagGroupsForFusedAllReduce(const ParallelLayout& layout, bool enabled) {
  WorkspaceTags tags;
  tags.by_object.assign(layout.objects().size(), WorkspaceKind::kNone);
  if (!enabled) return tags;
  tags.by_object[static_cast<size_t>(layout.ObjectIndex(MoeTagRole(layout.widths())))] =
      WorkspaceKind::kMoe;
  tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kAttnTp))] =
      WorkspaceKind::kAttnTp;
  return tags;
}

}  // namespace lockstep
