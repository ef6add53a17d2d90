#include "dispatch/group_layout.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lockstep {

std::string_view GroupRoleName(GroupRole role) {
  switch (role) {
    case GroupRole::kTp:
      return "tp";
    case GroupRole::kAttnTp:
      return "attn_tp";
    case GroupRole::kAttnCp:
      return "attn_cp";
    case GroupRole::kMoeEp:
      return "moe_ep";
    case GroupRole::kMoeTp:
      return "moe_tp";
    case GroupRole::kMoeDp:
      return "moe_dp";
    case GroupRole::kPp:
      return "pp";
  }
  return "?";
}

absl::StatusOr<GroupRole> ParseGroupRole(std::string_view name) {
  for (GroupRole role : kAllGroupRoles) {
    if (GroupRoleName(role) == name) return role;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "unknown group '%s': use tp, attn_tp, attn_cp, moe_ep, moe_tp, moe_dp or pp", name));
}

namespace {

using Partition = std::vector<std::vector<int>>;

// Applies `per_block` to every TP block (base b = pp_rank * tp) and
// concatenates the subgroups: every group but PP lives inside one TP block.
template <typename PerBlock>
Partition ForEachTpBlock(const ParallelWidths& w, PerBlock per_block) {
  Partition out;
  for (int p = 0; p < w.pp; ++p) per_block(p * w.tp, out);
  return out;
}

// Runs of `width` consecutive ranks inside each TP block.
Partition ConsecutiveRuns(const ParallelWidths& w, int width) {
  return ForEachTpBlock(w, [&](int base, Partition& out) {
    for (int start = 0; start < w.tp; start += width) {
      std::vector<int> group(static_cast<size_t>(width));
      for (int t = 0; t < width; ++t) group[static_cast<size_t>(t)] = base + start + t;
      out.push_back(std::move(group));
    }
  });
}

// Groups of `count` ranks with stride `stride`: for each outer index d (of
// `outer`, spaced `outer_step` apart) and each t < stride, the ranks
// base + d*outer_step + t + k*stride for k < count.
Partition Strided(const ParallelWidths& w, int outer, int outer_step, int stride, int count) {
  return ForEachTpBlock(w, [&](int base, Partition& out) {
    for (int d = 0; d < outer; ++d) {
      for (int t = 0; t < stride; ++t) {
        std::vector<int> group(static_cast<size_t>(count));
        for (int k = 0; k < count; ++k) {
          group[static_cast<size_t>(k)] = base + d * outer_step + t + k * stride;
        }
        out.push_back(std::move(group));
      }
    }
  });
}

}  // namespace

absl::StatusOr<ParallelLayout> ParallelLayout::Build(const ParallelConfig& config) {
  if (absl::Status s = ValidateParallelConfig(config); !s.ok()) return s;
  ParallelLayout layout;
  layout.config_ = config;
  const ParallelWidths w = DeriveWidths(config);
  layout.widths_ = w;
  for (auto& v : layout.rank_group_) v.assign(static_cast<size_t>(w.world), GroupId{});

  auto serve = [&](GroupRole role, int object) {
    layout.role_object_[static_cast<size_t>(role)] = object;
    if (layout.objects_[static_cast<size_t>(object)].roles.front() != role) {
      layout.objects_[static_cast<size_t>(object)].roles.push_back(role);
    }
  };

  // TP: consecutive blocks of tp ranks.
  const int tp = layout.AddObject("tp", GroupRole::kTp, ConsecutiveRuns(w, w.tp));
  serve(GroupRole::kTp, tp);

  // The objects in lockstep's creation order (SGLang creates TP, ATTN_CP,
  // ATTN_TP, MOE_DP, MOE_EP, MOE_TP, PP: the order changes object indices,
  // never rank lists or reuse). Reuse rules are those of
  // sglang/srt/distributed/parallel_state.py:2671-2985 @ 0.5.23.
  // ATTN_TP: runs of attn_tp inside each TP block; the TP object when equal.
  serve(GroupRole::kAttnTp, w.attn_tp == w.tp ? tp
                                              : layout.AddObject("attn_tp", GroupRole::kAttnTp,
                                                                 ConsecutiveRuns(w, w.attn_tp)));

  // ATTN_CP: b + d*attn_cp*attn_tp + t + k*attn_tp; the TP object when
  // attn_cp == tp (sglang/srt/distributed/parallel_state.py:2760-2761 @ 0.5.23).
  const int attn_cp =
      w.attn_cp == w.tp
          ? tp
          : layout.AddObject("attn_cp", GroupRole::kAttnCp,
                             Strided(w, w.attn_dp, w.attn_cp * w.attn_tp, w.attn_tp, w.attn_cp));
  serve(GroupRole::kAttnCp, attn_cp);

  // MOE_EP: b + d*ep*moe_tp + t + k*moe_tp; the TP object when ep == tp.
  serve(GroupRole::kMoeEp,
        w.moe_ep == w.tp
            ? tp
            : layout.AddObject("moe_ep", GroupRole::kMoeEp,
                               Strided(w, w.moe_dp, w.moe_ep * w.moe_tp, w.moe_tp, w.moe_ep)));

  // MOE_TP: runs of moe_tp; the TP object when moe_tp == tp.
  serve(GroupRole::kMoeTp, w.moe_tp == w.tp ? tp
                                            : layout.AddObject("moe_tp", GroupRole::kMoeTp,
                                                               ConsecutiveRuns(w, w.moe_tp)));

  // MOE_DP: the ATTN_CP object when attn_cp > moe_dp (CP partners exchange
  // tokens before the MoE anyway; the TP object too when attn_cp == tp), the
  // TP object when moe_dp == tp, else b + j + k*ep*moe_tp.
  int moe_dp;
  if (w.attn_cp > w.moe_dp) {
    moe_dp = attn_cp;
  } else if (w.moe_dp == w.tp) {
    moe_dp = tp;
  } else {
    const int span = w.moe_ep * w.moe_tp;
    moe_dp = layout.AddObject("moe_dp", GroupRole::kMoeDp, Strided(w, 1, 0, span, w.moe_dp));
  }
  serve(GroupRole::kMoeDp, moe_dp);

  // PP: range(i, world, world / pp) for i < world / pp.
  Partition pp;
  const int stride = w.world / w.pp;
  for (int i = 0; i < stride; ++i) {
    std::vector<int> group;
    for (int r = i; r < w.world; r += stride) group.push_back(r);
    pp.push_back(std::move(group));
  }
  serve(GroupRole::kPp, layout.AddObject("pp", GroupRole::kPp, std::move(pp)));

  for (GroupRole role : kAllGroupRoles) {
    auto& by_rank = layout.rank_group_[static_cast<size_t>(role)];
    for (GroupId id : layout.Object(role).members) {
      for (int r : layout.Peers(id)) by_rank[static_cast<size_t>(r)] = id;
    }
  }
  return layout;
}

int ParallelLayout::AddObject(std::string name, GroupRole role, Partition partition) {
  GroupObject object;
  object.name = std::move(name);
  object.roles.push_back(role);
  object.members.reserve(partition.size());
  for (auto& ranks : partition) object.members.push_back(InternUnchecked(std::move(ranks)));
  objects_.push_back(std::move(object));
  return static_cast<int>(objects_.size()) - 1;
}

GroupId ParallelLayout::InternUnchecked(std::vector<int> ranks) {
  // Ids are handed out in insertion order, so they never depend on hashing.
  auto [it, inserted] = intern_.try_emplace(ranks, static_cast<uint32_t>(peer_sets_.size()));
  if (inserted) {
    bool range = !ranks.empty();
    for (size_t i = 1; i < ranks.size() && range; ++i) {
      range = ranks[i] == ranks.front() + static_cast<int>(i);
    }
    range_start_.push_back(range ? ranks.front() : -1);
    peer_sets_.push_back(std::move(ranks));
  }
  return GroupId{it->second};
}

absl::StatusOr<GroupId> ParallelLayout::Intern(std::span<const int> ranks) {
  if (ranks.empty()) return absl::InvalidArgumentError("a peer set needs at least one rank");
  std::vector<int> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer set [", absl::StrJoin(ranks, ","), "] names a rank twice"));
  }
  if (sorted.front() < 0 || sorted.back() >= world_size()) {
    return absl::InvalidArgumentError(absl::StrCat("peer set [", absl::StrJoin(ranks, ","),
                                                   "] names a rank outside the world of ",
                                                   world_size(), " ranks"));
  }
  return InternUnchecked(std::vector<int>(ranks.begin(), ranks.end()));
}

int ParallelLayout::RankInGroup(GroupId id, int rank) const {
  const auto& peers = peer_sets_[id.value];
  if (const int first = range_start_[id.value]; first >= 0) {
    return rank >= first && rank - first < static_cast<int>(peers.size()) ? rank - first : -1;
  }
  auto it = std::find(peers.begin(), peers.end(), rank);
  return it == peers.end() ? -1 : static_cast<int>(it - peers.begin());
}

std::string ParallelLayout::PeersToString(GroupId id) const {
  return absl::StrCat("[", absl::StrJoin(peer_sets_[id.value], ","), "]");
}

}  // namespace lockstep
