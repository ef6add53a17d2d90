#include "sim/memory/value.h"

#include <algorithm>

#include "dispatch/stable_hash.h"

namespace lockstep {

uint64_t ContributionKey(int rank, uint64_t instance) {
  constexpr uint64_t kInstanceMul = 0x9e3779b97f4a7c15u;
  constexpr uint64_t kRankMul = 0xc2b2ae3d27d4eb4fu;
  return StableHasher::Mix(instance * kInstanceMul +
                           static_cast<uint64_t>(static_cast<uint32_t>(rank)) * kRankMul) |
         uint64_t{1};
}

ContributorSets::ContributorSets() { sets_.emplace_back(); }

uint32_t ContributorSets::Singleton(int rank, uint64_t instance) {
  sets_.push_back({Contribution{rank, instance, 1}});
  return static_cast<uint32_t>(sets_.size() - 1);
}

uint32_t ContributorSets::Merge(uint32_t a, uint32_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  const auto& x = sets_[a];
  const auto& y = sets_[b];
  std::vector<Contribution> out;
  out.reserve(x.size() + y.size());
  auto less = [](const Contribution& l, const Contribution& r) {
    return l.rank != r.rank ? l.rank < r.rank : l.instance < r.instance;
  };
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (j == y.size() || (i < x.size() && less(x[i], y[j]))) {
      out.push_back(x[i++]);
    } else if (i == x.size() || less(y[j], x[i])) {
      out.push_back(y[j++]);
    } else {
      Contribution c = x[i++];
      c.count += y[j++].count;
      out.push_back(c);
    }
  }
  sets_.push_back(std::move(out));
  return static_cast<uint32_t>(sets_.size() - 1);
}

NumericArray NumericStore::Add(std::vector<uint32_t> bits, int64_t first) {
  const auto elems = static_cast<int64_t>(bits.size());
  *live_ += elems;
  peak_ = std::max(peak_, *live_);
  // The deleter keeps the counter alive: a value may outlive the store.
  std::shared_ptr<int64_t> live = live_;
  return NumericArray(new NumericBits{first, std::move(bits)}, [live, elems](const NumericBits* a) {
    *live -= elems;
    delete a;
  });
}

}  // namespace lockstep
