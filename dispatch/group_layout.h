// The process groups of one replica, built exactly as SGLang's
// initialize_model_parallel builds them, and the interned peer sets that give
// each group its identity.

#ifndef LOCKSTEP_DISPATCH_GROUP_LAYOUT_H_
#define LOCKSTEP_DISPATCH_GROUP_LAYOUT_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "dispatch/parallel_config.h"

namespace lockstep {

// The roles a process group plays in SGLang's parallel state.
enum class GroupRole : uint8_t { kTp, kAttnTp, kAttnCp, kMoeEp, kMoeTp, kMoeDp, kPp };
inline constexpr int kNumGroupRoles = 7;
inline constexpr std::array<GroupRole, kNumGroupRoles> kAllGroupRoles = {
    GroupRole::kTp,    GroupRole::kAttnTp, GroupRole::kAttnCp, GroupRole::kMoeEp,
    GroupRole::kMoeTp, GroupRole::kMoeDp,  GroupRole::kPp};

// "tp", "attn_tp", "attn_cp", "moe_ep", "moe_tp", "moe_dp", "pp".
std::string_view GroupRoleName(GroupRole role);
// Inverse of GroupRoleName; InvalidArgument lists the names.
absl::StatusOr<GroupRole> ParseGroupRole(std::string_view name);

// Identity of an exact ordered peer set within one ParallelLayout. Two groups
// with the same ranks in the same order have the same id, whatever their
// role; two groups of equal size with other peers never do. This is the
// equality the fused all-reduce's workspace check needs (SGLang compares the
// (device_group, cpu_group) pair, not the world size).
struct GroupId {
  uint32_t value = kInvalid;
  static constexpr uint32_t kInvalid = 0xffffffffu;

  bool valid() const { return value != kInvalid; }
  friend bool operator==(GroupId, GroupId) = default;
};

// One process-group object as SGLang creates it: a partition of the world into
// peer sets. One object serves several roles when SGLang reuses it (ATTN_TP is
// the TP object when attn_tp == tp, and so on).
struct GroupObject {
  std::string name;              // the role it was created for, e.g. "moe_ep"
  std::vector<GroupRole> roles;  // every role it serves, creation role first
  std::vector<GroupId> members;  // one peer set per subgroup; together: every rank
};

// The groups of a replica. Immutable once built; shared by every rank.
class ParallelLayout {
 public:
  // Validates `config` and builds every group. Errors say what to change.
  static absl::StatusOr<ParallelLayout> Build(const ParallelConfig& config);

  const ParallelConfig& config() const { return config_; }
  const ParallelWidths& widths() const { return widths_; }
  int world_size() const { return widths_.world; }

  const std::vector<GroupObject>& objects() const { return objects_; }
  // Index into objects() of the object that serves `role`.
  int ObjectIndex(GroupRole role) const { return role_object_[static_cast<size_t>(role)]; }
  const GroupObject& Object(GroupRole role) const {
    return objects_[static_cast<size_t>(ObjectIndex(role))];
  }

  // The peer set of `role` that contains `rank` (0 <= rank < world_size()).
  GroupId GroupOf(GroupRole role, int rank) const {
    return rank_group_[static_cast<size_t>(role)][static_cast<size_t>(rank)];
  }
  // Ranks of a peer set, in group order.
  std::span<const int> Peers(GroupId id) const { return peer_sets_[id.value]; }
  int GroupSize(GroupId id) const { return static_cast<int>(peer_sets_[id.value].size()); }
  // The first rank when the set is the ranks first, first + 1, ... in order
  // (most groups are), else -1: callers that would scan the set per rank
  // answer in O(1) instead.
  int RangeStart(GroupId id) const { return range_start_[id.value]; }
  // Position of `rank` within group `id`, or -1 when it is not a member.
  int RankInGroup(GroupId id, int rank) const;
  // Number of distinct peer sets interned.
  size_t num_peer_sets() const { return peer_sets_.size(); }

  // Interns a peer set built outside the layout (a binding the fault injector
  // forges, a group the hardware runner splits). Returns its id; equal rank
  // lists give equal ids. Ranks must be distinct and in [0, world_size()).
  absl::StatusOr<GroupId> Intern(std::span<const int> ranks);

  // "[0,2]" style text of a peer set.
  std::string PeersToString(GroupId id) const;

 private:
  GroupId InternUnchecked(std::vector<int> ranks);
  int AddObject(std::string name, GroupRole role, std::vector<std::vector<int>> partition);

  ParallelConfig config_;
  ParallelWidths widths_;
  std::vector<std::vector<int>> peer_sets_;
  std::vector<int> range_start_;  // per peer set: RangeStart
  absl::flat_hash_map<std::vector<int>, uint32_t> intern_;
  std::vector<GroupObject> objects_;
  std::array<int, kNumGroupRoles> role_object_{};
  std::array<std::vector<GroupId>, kNumGroupRoles> rank_group_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_GROUP_LAYOUT_H_
