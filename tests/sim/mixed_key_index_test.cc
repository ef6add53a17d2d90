// MixedKeyIndex (sim/memory/mixed_key_index.h) against std::unordered_map
// under random inserts, finds and erases, with keys whose low bits collide
// often, so that probing runs long and wraps around the table and every
// erase shifts a cluster back.

#include "sim/memory/mixed_key_index.h"

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "gtest/gtest.h"
#include "sim/runtime/rng.h"

namespace lockstep {
namespace {

TEST(MixedKeyIndexTest, MatchesAnUnorderedMapUnderCollidingKeys) {
  Rng rng(51);
  // Keys drawn from a small pool whose low bits take four values near the
  // end of every table size: they share few home slots, and clusters wrap.
  std::vector<uint64_t> pool;
  for (int i = 0; i < 200; ++i) pool.push_back((rng.Next() << 9) | (511 - rng.Below(4) * 3));
  MixedKeyIndex index;
  std::unordered_map<uint64_t, uint32_t> model;
  uint32_t next_value = 0;
  for (int step = 0; step < 50000; ++step) {
    const uint64_t key = pool[rng.Below(pool.size())];
    const auto it = model.find(key);
    switch (rng.Below(3)) {
      case 0: {
        const auto [value, inserted] = index.Insert(key, next_value);
        EXPECT_EQ(inserted, it == model.end()) << "step " << step;
        if (it == model.end()) {
          EXPECT_EQ(value, next_value);
          model.emplace(key, next_value++);
        } else {
          EXPECT_EQ(value, it->second);
        }
        break;
      }
      case 1:
        EXPECT_EQ(index.Erase(key), it != model.end()) << "step " << step;
        if (it != model.end()) model.erase(it);
        break;
      case 2:
        EXPECT_EQ(index.Find(key), it == model.end() ? MixedKeyIndex::kAbsent : it->second)
            << "step " << step;
        break;
    }
    ASSERT_EQ(index.size(), model.size()) << "step " << step;
    if (step % 1000 == 0) {
      // Every key the model holds is found, after any number of shifts.
      for (const auto& [k, v] : model) ASSERT_EQ(index.Find(k), v) << "step " << step;
    }
  }
}

TEST(MixedKeyIndexTest, AnEmptyIndexFindsAndErasesNothing) {
  MixedKeyIndex index;
  EXPECT_EQ(index.Find(7), MixedKeyIndex::kAbsent);
  EXPECT_FALSE(index.Erase(7));
  EXPECT_TRUE(index.Insert(0, 3).second);  // key 0 is a key like any other
  EXPECT_EQ(index.Find(0), 3u);
  EXPECT_TRUE(index.Erase(0));
  EXPECT_EQ(index.size(), 0u);
}

}  // namespace
}  // namespace lockstep
