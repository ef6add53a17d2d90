// Position of a global rank in a peer list, in O(log n): the simulated
// communicators, workspaces and custom all-reduces look their caller up on
// every call, and a linear search made one collective of a 4096-rank group
// cost 4096² steps.

#ifndef LOCKSTEP_SIM_MEMORY_MEMBER_INDEX_H_
#define LOCKSTEP_SIM_MEMORY_MEMBER_INDEX_H_

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

namespace lockstep {

class MemberIndex {
 public:
  MemberIndex() = default;
  explicit MemberIndex(std::span<const int> peers) { Reset(peers); }

  void Reset(std::span<const int> peers) {
    by_rank_.clear();
    by_rank_.reserve(peers.size());
    for (size_t i = 0; i < peers.size(); ++i) by_rank_.emplace_back(peers[i], static_cast<int>(i));
    // Stable, so a rank listed twice (a forged binding) resolves to its first
    // position, as the linear search did.
    std::stable_sort(by_rank_.begin(), by_rank_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  // The member index of `rank`, or -1.
  int Find(int rank) const {
    auto it = std::lower_bound(by_rank_.begin(), by_rank_.end(), rank,
                               [](const std::pair<int, int>& e, int r) { return e.first < r; });
    return it != by_rank_.end() && it->first == rank ? it->second : -1;
  }

 private:
  std::vector<std::pair<int, int>> by_rank_;  // (rank, member), by rank
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_MEMBER_INDEX_H_
