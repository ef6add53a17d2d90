// A map from 64-bit keys that are already well mixed (StableHasher digests)
// to small integers: open addressing, linear probing, deletion by backward
// shift (Knuth, TAOCP vol. 3, 6.4, algorithm R), no tombstones.
//
// absl::flat_hash_map hashes its keys again and probes a group of slots with
// SIMD; for keys that need no hashing and a table of a few dozen entries, a
// find, insert and erase here cost a fraction of that. The reduction checker
// does one of each per checked call (docs/PERFORMANCE.md, fifteenth session).

#ifndef LOCKSTEP_SIM_MEMORY_MIXED_KEY_INDEX_H_
#define LOCKSTEP_SIM_MEMORY_MIXED_KEY_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace lockstep {

class MixedKeyIndex {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  // The value of `key`, or kAbsent.
  uint32_t Find(uint64_t key) const {
    if (slots_.empty()) return kAbsent;
    for (size_t i = Home(key);; i = Next(i)) {
      const Slot& s = slots_[i];
      if (s.value == kAbsent) return kAbsent;
      if (s.key == key) return s.value;
    }
  }

  // Inserts key -> value (value != kAbsent) unless `key` is present; returns
  // the value `key` has and whether it was inserted.
  std::pair<uint32_t, bool> Insert(uint64_t key, uint32_t value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) Rehash(slots_.empty() ? 16 : 2 * slots_.size());
    for (size_t i = Home(key);; i = Next(i)) {
      Slot& s = slots_[i];
      if (s.value == kAbsent) {
        s = Slot{key, value};
        ++size_;
        return {value, true};
      }
      if (s.key == key) return {s.value, false};
    }
  }

  // Removes `key`; returns whether it was present.
  bool Erase(uint64_t key) {
    if (slots_.empty()) return false;
    size_t hole = Home(key);
    for (;; hole = Next(hole)) {
      if (slots_[hole].value == kAbsent) return false;
      if (slots_[hole].key == key) break;
    }
    // Shift back every later entry of the cluster that may fill the hole: one
    // whose home is not cyclically within (hole, i].
    for (size_t i = Next(hole);; i = Next(i)) {
      Slot& s = slots_[i];
      if (s.value == kAbsent) break;
      const size_t home = Home(s.key);
      const bool stays = hole < i ? (hole < home && home <= i) : (hole < home || home <= i);
      if (stays) continue;
      slots_[hole] = s;
      hole = i;
    }
    slots_[hole].value = kAbsent;
    --size_;
    return true;
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t value = kAbsent;
  };
  size_t Home(uint64_t key) const { return key & (slots_.size() - 1); }
  size_t Next(size_t i) const { return (i + 1) & (slots_.size() - 1); }
  void Rehash(size_t capacity) {
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(capacity));
    size_ = 0;
    for (const Slot& s : old) {
      if (s.value != kAbsent) Insert(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;  // a power of two of them, at most 3/4 used
  size_t size_ = 0;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_MIXED_KEY_INDEX_H_
