#include "sim/memory/member_index.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"
#include "sim/runtime/rng.h"

namespace lockstep {
namespace {

// What MemberIndex must give: the first position of `rank`, or -1.
int LinearFind(const std::vector<int>& peers, int rank) {
  for (size_t i = 0; i < peers.size(); ++i) {
    if (peers[i] == rank) return static_cast<int>(i);
  }
  return -1;
}

void ExpectFindsAsALinearSearch(const std::vector<int>& peers) {
  const MemberIndex index(peers);
  int lo = -3, hi = 3;
  for (int p : peers) {
    lo = std::min(lo, p - 3);
    hi = std::max(hi, p + 3);
  }
  for (int rank = lo; rank <= hi; ++rank) {
    ASSERT_EQ(index.Find(rank), LinearFind(peers, rank)) << "rank " << rank;
  }
}

TEST(MemberIndexTest, StridedListsAreFoundAsALinearSearchFindsThem) {
  // Consecutive ranks (a TP group), strided ones (pipeline, DP), one member,
  // none, and lists starting past zero.
  ExpectFindsAsALinearSearch({});
  ExpectFindsAsALinearSearch({5});
  ExpectFindsAsALinearSearch({0, 1, 2, 3, 4, 5, 6, 7});
  ExpectFindsAsALinearSearch({64, 65, 66, 67});
  ExpectFindsAsALinearSearch({3, 11, 19, 27, 35});
  ExpectFindsAsALinearSearch({0, 72});
}

TEST(MemberIndexTest, OtherListsAreFoundAsALinearSearchFindsThem) {
  // Descending, with a gap, with a rank listed twice (a forged binding: its
  // first position), and random lists.
  ExpectFindsAsALinearSearch({7, 6, 5, 4});
  ExpectFindsAsALinearSearch({0, 1, 2, 4, 5});
  ExpectFindsAsALinearSearch({0, 2, 4, 7});
  ExpectFindsAsALinearSearch({3, 3, 3});
  ExpectFindsAsALinearSearch({1, 2, 2, 3});
  Rng rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int> peers;
    const auto n = static_cast<int>(rng.Below(10));
    const auto first = static_cast<int>(rng.Below(50));
    const auto stride = static_cast<int>(rng.Below(4));  // 0: a rank repeated
    for (int i = 0; i < n; ++i) {
      // Mostly a progression; now and then one member off it.
      peers.push_back(first + i * stride + (rng.Below(6) == 0 ? 1 : 0));
    }
    SCOPED_TRACE(::testing::Message() << "trial " << trial);
    ExpectFindsAsALinearSearch(peers);
  }
}

TEST(MemberIndexTest, ResetReplacesTheList) {
  // A fault's stale binding re-binds a workspace to other peers.
  MemberIndex index(std::vector<int>{0, 1, 2, 3});
  EXPECT_EQ(index.Find(2), 2);
  index.Reset(std::vector<int>{9, 4, 6});
  EXPECT_EQ(index.Find(2), -1);
  EXPECT_EQ(index.Find(4), 1);
  index.Reset(std::vector<int>{8, 10, 12});
  EXPECT_EQ(index.Find(4), -1);
  EXPECT_EQ(index.Find(10), 1);
  EXPECT_EQ(index.Find(11), -1);
  EXPECT_EQ(index.Find(14), -1);
}

}  // namespace
}  // namespace lockstep
