// SmallVector (sim/memory/small_vector.h) against std::vector under random
// operations, with elements that own a shared_ptr as SimValue does: the
// contents must match after every operation, and every element must be
// destroyed exactly once (the owners' counts return to one at the end; ASan
// sees any double free or leak).

#include "sim/memory/small_vector.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "sim/runtime/rng.h"

namespace lockstep {
namespace {

struct Elem {
  int64_t id = -1;
  std::shared_ptr<const int64_t> owner;
};

}  // namespace

template <>
struct IsTriviallyRelocatable<Elem> : std::true_type {};

namespace {

using Vec = SmallVector<Elem>;

void ExpectSame(const Vec& got, const std::vector<Elem>& want, int step) {
  ASSERT_EQ(got.size(), want.size()) << "after step " << step;
  ASSERT_EQ(got.empty(), want.empty());
  ASSERT_GE(got.capacity(), got.size());
  size_t i = 0;
  for (const Elem& e : got) {
    EXPECT_EQ(e.id, want[i].id) << "element " << i << " after step " << step;
    EXPECT_EQ(e.owner, want[i].owner) << "element " << i << " after step " << step;
    ++i;
  }
  if (!want.empty()) {
    EXPECT_EQ(got.front().id, want.front().id);
    EXPECT_EQ(got.back().id, want.back().id);
  }
}

TEST(SmallVectorTest, MatchesStdVectorUnderRandomOperations) {
  // Tokens the elements share: each element holds one (or none).
  std::vector<std::shared_ptr<const int64_t>> tokens;
  for (int64_t t = 0; t < 16; ++t) tokens.push_back(std::make_shared<const int64_t>(t));
  int64_t next_id = 0;
  Rng rng(20261205);
  const auto make = [&] {
    const uint64_t t = rng.Below(17);
    return Elem{next_id++, t == 16 ? nullptr : tokens[t]};
  };
  {
    Vec v;
    std::vector<Elem> model;
    for (int step = 0; step < 20000; ++step) {
      const size_t n = model.size();
      switch (rng.Below(14)) {
        case 0:
        case 1: {
          const Elem e = make();
          v.push_back(e);
          model.push_back(e);
          break;
        }
        case 2: {
          Elem e = make();
          model.push_back(e);
          v.emplace_back(std::move(e));
          break;
        }
        case 3:
          if (n > 0) {
            // An element of the vector itself, pushed while it may grow.
            const size_t i = rng.Below(n);
            v.push_back(v[i]);
            model.push_back(model[i]);
          }
          break;
        case 4:
          if (n > 0) {
            v.pop_back();
            model.pop_back();
          }
          break;
        case 5:
        case 6: {
          const size_t first = rng.Below(n + 1);
          const size_t last = first + rng.Below(n - first + 1);
          const auto it = v.erase(v.begin() + first, v.begin() + last);
          EXPECT_EQ(it, v.begin() + first);
          model.erase(model.begin() + static_cast<std::ptrdiff_t>(first),
                      model.begin() + static_cast<std::ptrdiff_t>(last));
          break;
        }
        case 7:
        case 8: {
          const size_t at = rng.Below(n + 1);
          const size_t count = rng.Below(4);
          // Half the time the inserted value is an element of the vector.
          const bool own = n > 0 && rng.Below(2) == 0;
          const size_t from = own ? rng.Below(n) : 0;
          const Elem value = own ? model[from] : make();
          const auto it = own ? v.insert(v.begin() + at, count, v[from])
                              : v.insert(v.begin() + at, count, value);
          EXPECT_EQ(it, v.begin() + at);
          model.insert(model.begin() + static_cast<std::ptrdiff_t>(at), count, value);
          break;
        }
        case 9: {
          const size_t size = rng.Below(6);
          v.resize(size);
          model.resize(size);
          break;
        }
        case 10:
          if (rng.Below(8) == 0) {
            v.clear();
            model.clear();
          } else {
            v.reserve(rng.Below(12));
          }
          break;
        case 11: {
          // Copies: constructed and assigned, over a vector of either form.
          Vec copy(v);
          ExpectSame(copy, model, step);
          Vec other;
          for (uint64_t k = rng.Below(4); k > 0; --k) other.push_back(make());
          other = copy;
          ExpectSame(other, model, step);
          const Vec& self = other;
          other = self;
          ExpectSame(other, model, step);
          v = other;
          break;
        }
        case 12: {
          // Moves: constructed and assigned; the source is left empty.
          Vec moved(std::move(v));
          EXPECT_TRUE(v.empty());  // NOLINT(bugprone-use-after-move)
          ExpectSame(moved, model, step);
          for (uint64_t k = rng.Below(4); k > 0; --k) v.push_back(make());
          v = std::move(moved);
          EXPECT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move)
          break;
        }
        case 13: {
          const size_t count = rng.Below(4);
          const Elem value = n > 0 ? model[rng.Below(n)] : make();
          v.assign(count, value);
          model.assign(count, value);
          break;
        }
      }
      ExpectSame(v, model, step);
      if (HasFailure()) return;
    }
  }
  // Every copy an element made is gone with it.
  for (const auto& t : tokens) EXPECT_EQ(t.use_count(), 1);
}

TEST(SmallVectorTest, KeepsItsStorageWhenCleared) {
  Vec v;
  EXPECT_EQ(v.capacity(), 1u);
  for (int64_t i = 0; i < 5; ++i) v.push_back(Elem{i, nullptr});
  const size_t capacity = v.capacity();
  EXPECT_GE(capacity, 5u);
  v.clear();
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(v.capacity(), capacity);
  v.erase(v.begin(), v.end());
  EXPECT_EQ(v.capacity(), capacity);
}

TEST(SmallVectorTest, AtChecksItsIndex) {
  Vec v;
  v.push_back(Elem{7, nullptr});
  EXPECT_EQ(v.at(0).id, 7);
  EXPECT_THROW(v.at(1), std::out_of_range);
}

}  // namespace
}  // namespace lockstep
