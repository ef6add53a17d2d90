// Position of a global rank in a peer list, in O(log n): the simulated
// communicators, workspaces and custom all-reduces look their caller up on
// every call, and a linear search made one collective of a 4096-rank group
// cost 4096² steps. A list that steps by a fixed stride (a TP group's
// consecutive ranks, a pipeline or DP group's strided ones: almost every
// group) is found by arithmetic, touching no table: in one group of 4 096
// ranks the binary search's probes cost ~1.7 cache misses a call
// (docs/PERFORMANCE.md, eighteenth session).

#ifndef LOCKSTEP_SIM_MEMORY_MEMBER_INDEX_H_
#define LOCKSTEP_SIM_MEMORY_MEMBER_INDEX_H_

#include <algorithm>
#include <cstdint>
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
    stride_ = Stride(peers);
    if (stride_ > 0) {
      first_ = peers.front();
      count_ = static_cast<int64_t>(peers.size());
      by_rank_.shrink_to_fit();
      return;
    }
    by_rank_.reserve(peers.size());
    for (size_t i = 0; i < peers.size(); ++i) by_rank_.emplace_back(peers[i], static_cast<int>(i));
    // Stable, so a rank listed twice (a forged binding) resolves to its first
    // position, as the linear search did.
    std::stable_sort(by_rank_.begin(), by_rank_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  // The member index of `rank`, or -1.
  int Find(int rank) const {
    if (stride_ > 0) {
      const int64_t d = static_cast<int64_t>(rank) - first_;
      if (d < 0) return -1;
      if (stride_ == 1) return d < count_ ? static_cast<int>(d) : -1;
      if (d % stride_ != 0) return -1;
      return d / stride_ < count_ ? static_cast<int>(d / stride_) : -1;
    }
    auto it = std::lower_bound(by_rank_.begin(), by_rank_.end(), rank,
                               [](const std::pair<int, int>& e, int r) { return e.first < r; });
    return it != by_rank_.end() && it->first == rank ? it->second : -1;
  }

 private:
  // The stride of `peers` if member i is peers[0] + i * stride for a stride
  // above zero (one member: 1), else 0.
  static int64_t Stride(std::span<const int> peers) {
    if (peers.empty()) return 0;
    const int64_t stride = peers.size() > 1 ? int64_t{peers[1]} - peers[0] : 1;
    if (stride <= 0) return 0;
    for (size_t i = 1; i < peers.size(); ++i) {
      if (int64_t{peers[i]} - peers[i - 1] != stride) return 0;
    }
    return stride;
  }

  // An arithmetic list (stride_ > 0): member i is first_ + i * stride_.
  int64_t stride_ = 0;
  int64_t first_ = 0;
  int64_t count_ = 0;
  std::vector<std::pair<int, int>> by_rank_;  // otherwise: (rank, member), by rank
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_MEMBER_INDEX_H_
