// BlockWords (sim/memory/block_words.h) holds what one word per block held:
// checked against that plain array under prefix updates of mixed grid sizes,
// wrap-around included.

#include "sim/memory/block_words.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "sim/runtime/rng.h"

namespace lockstep {
namespace {

// The representation it replaces: a word per block, grown to the widest grid.
struct PlainWords {
  std::vector<uint32_t> words;
  void AddToFirst(int32_t blocks, uint32_t delta) {
    if (blocks <= 0) return;
    if (words.size() < static_cast<size_t>(blocks)) words.resize(static_cast<size_t>(blocks));
    for (int32_t b = 0; b < blocks; ++b) words[static_cast<size_t>(b)] += delta;
  }
  uint32_t At(int32_t b) const {
    return static_cast<size_t>(b) < words.size() ? words[static_cast<size_t>(b)] : 0;
  }
};

TEST(BlockWordsTest, AnEmptyGridAddsNothing) {
  BlockWords w;
  w.AddToFirst(0, 5);
  w.AddToFirst(-3, 5);
  EXPECT_EQ(w.At(0), 0u);
  int segments = 0;
  EXPECT_TRUE(w.ForEachSegmentStart(w, 8, [&](int32_t) {
    ++segments;
    return true;
  }));
  EXPECT_EQ(segments, 1);  // block 0 alone: every word is 0
}

TEST(BlockWordsTest, MixedGridsGiveEachBlockWhatItsOwnWordWouldHold) {
  BlockWords a, b;
  PlainWords plain_a, plain_b;
  a.AddToFirst(64, 0xffffffffu);  // wraps like the device's unsigned words
  plain_a.AddToFirst(64, 0xffffffffu);
  EXPECT_EQ(a.At(0), 0xffffffffu);
  a.AddToFirst(64, 2);
  plain_a.AddToFirst(64, 2);
  EXPECT_EQ(a.At(63), 1u);
  EXPECT_EQ(a.At(64), 0u);

  Rng rng(7);
  constexpr int32_t kGrids[] = {1, 16, 64, 96, 148};
  for (int step = 0; step < 2000; ++step) {
    const int32_t grid = kGrids[rng.Below(5)];
    const auto delta = static_cast<uint32_t>(rng.Below(1u << 20)) * 4099u;
    if (rng.Below(2) == 0) {
      a.AddToFirst(grid, delta);
      plain_a.AddToFirst(grid, delta);
    } else {
      b.AddToFirst(grid, delta);
      plain_b.AddToFirst(grid, delta);
    }
    for (int32_t block = 0; block < 160; ++block) {
      ASSERT_EQ(a.At(block), plain_a.At(block)) << "step " << step << " block " << block;
      ASSERT_EQ(b.At(block), plain_b.At(block)) << "step " << step << " block " << block;
    }
    // Between consecutive segment starts both words are constant, and every
    // change below the grid falls on a start.
    const int32_t blocks = kGrids[rng.Below(5)];
    std::vector<int32_t> starts;
    ASSERT_TRUE(a.ForEachSegmentStart(b, blocks, [&](int32_t s) {
      starts.push_back(s);
      return true;
    }));
    ASSERT_FALSE(starts.empty());
    ASSERT_EQ(starts.front(), 0);
    for (size_t i = 0; i < starts.size(); ++i) {
      const int32_t end = i + 1 < starts.size() ? starts[i + 1] : blocks;
      ASSERT_LT(starts[i], end);
      for (int32_t block = starts[i]; block < end; ++block) {
        ASSERT_EQ(plain_a.At(block), plain_a.At(starts[i]));
        ASSERT_EQ(plain_b.At(block), plain_b.At(starts[i]));
      }
    }
  }
}

TEST(BlockWordsTest, TheWalkStopsWhereTheCallbackSaysSo) {
  BlockWords a, b;
  a.AddToFirst(16, 1);
  b.AddToFirst(64, 1);
  std::vector<int32_t> seen;
  EXPECT_FALSE(a.ForEachSegmentStart(b, 96, [&](int32_t s) {
    seen.push_back(s);
    return s < 16;
  }));
  EXPECT_EQ(seen, (std::vector<int32_t>{0, 16}));
  seen.clear();
  EXPECT_TRUE(a.ForEachSegmentStart(b, 96, [&](int32_t s) {
    seen.push_back(s);
    return true;
  }));
  EXPECT_EQ(seen, (std::vector<int32_t>{0, 16, 64}));
}

}  // namespace
}  // namespace lockstep
