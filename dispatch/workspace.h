// Fusion workspaces: peer memory that a fused all-reduce kernel needs, bound
// to the exact peer set it rendezvoused on.

#ifndef LOCKSTEP_DISPATCH_WORKSPACE_H_
#define LOCKSTEP_DISPATCH_WORKSPACE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "dispatch/dtype.h"
#include "dispatch/group_layout.h"

namespace lockstep {

// Which workspace a group may use for kAllReduce (SGLang's _fi_workspace_hint).
enum class WorkspaceKind : uint8_t { kNone = 0, kAttnTp, kMoe };

// "none", "attn_tp", "moe".
std::string_view WorkspaceKindName(WorkspaceKind kind);

// What a workspace was sized for. A call fits when tokens <= max_tokens,
// hidden <= hidden and the dtype is the same.
struct WorkspaceCapacity {
  int64_t max_tokens = 0;
  int64_t hidden = 0;
  DType dtype = DType::kUnset;

  friend bool operator==(const WorkspaceCapacity&, const WorkspaceCapacity&) = default;
};

// One fusion workspace as seen by one rank. `initialized` and the capacity are
// the values every rank of `group` agreed on (a workspace that failed to
// allocate on any rank is uninitialised on all of them, after the vote).
struct Workspace {
  WorkspaceKind kind = WorkspaceKind::kNone;
  GroupId group;       // the exact peer set it rendezvoused on
  int world_size = 0;  // that peer set's size
  WorkspaceCapacity capacity;
  bool initialized = false;
  uint32_t generation = 0;  // bumped by every re-initialisation
};

// The group tags of a layout: for each group object (ParallelLayout::objects()
// index), the workspace its all-reduces may use.
struct WorkspaceTags {
  std::vector<WorkspaceKind> by_object;

  WorkspaceKind ForObject(int object) const { return by_object[static_cast<size_t>(object)]; }
};

// The role SGLang tags with the MoE workspace hint: MOE_EP when moe_ep > 1,
// else MOE_TP (distributed/parallel_state.py:2378 @ 0.5.23). Since SGLang
// 0.5.23 moved the MoE workspace to TP when EP and MoE-TP merge, the tag and
// the workspace can name different groups there (docs/FIDELITY.md,
// INCONSISTENCY-1): the exact peer-set check then refuses the pairing.
GroupRole MoeTagRole(const ParallelWidths& widths);

// SGLang's _tag_groups_for_flashinfer_allreduce_only()
// (distributed/parallel_state.py:2357-2384 @ 0.5.23): tags MoeTagRole's
// object with kMoe, then ATTN_TP with kAttnTp (when one object serves both,
// the last tag wins). The full TP role is never tagged for its own sake:
// under DP attention it addresses peers neither workspace rendezvoused on.
// With `enabled` false (no kAllReduce backend), nothing is tagged.
WorkspaceTags TagGroupsForFusedAllReduce(const ParallelLayout& layout, bool enabled);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_WORKSPACE_H_
