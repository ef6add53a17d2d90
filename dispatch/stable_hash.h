// A hash that is the same on every run and every machine, for fingerprints
// and trace digests. absl::Hash is seeded per process and must not be used
// for anything that is compared across ranks, runs or hosts.

#ifndef LOCKSTEP_DISPATCH_STABLE_HASH_H_
#define LOCKSTEP_DISPATCH_STABLE_HASH_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace lockstep {

// Accumulates 64-bit words with a splitmix64 finaliser per word. Order
// matters; equal sequences give equal digests everywhere.
class StableHasher {
 public:
  constexpr StableHasher() = default;
  constexpr explicit StableHasher(uint64_t seed) : state_(seed) {}

  constexpr StableHasher& Add(uint64_t word) {
    state_ = Mix(state_ ^ (word + 0x9e3779b97f4a7c15ull + (state_ << 6) + (state_ >> 2)));
    return *this;
  }
  constexpr StableHasher& Add(std::string_view text) {
    Add(text.size());
    uint64_t word = 0;
    int n = 0;
    for (char c : text) {
      word = (word << 8) | static_cast<unsigned char>(c);
      if (++n == 8) {
        Add(word);
        word = 0;
        n = 0;
      }
    }
    if (n != 0) Add(word);
    return *this;
  }
  constexpr uint64_t digest() const { return Mix(state_); }

  static constexpr uint64_t Mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_ = 0x6a09e667f3bcc908ull;
};

// Four multiply-xorshift lanes (FNV-1a on 64-bit words) over `groups`
// groups of four words, lane l taking word l of each group (`word_at(i)` is
// word i): independent chains, for lists as long as a group that every
// member digests, where one chain of dependent multiplies per word would
// cost the group the square of its width in latency.
template <class WordAt>
void AddLanes(size_t groups, WordAt word_at, uint64_t (&lane)[4]) {
  for (size_t g = 0; g < groups; ++g) {
    for (size_t l = 0; l < 4; ++l) {
      lane[l] = (lane[l] ^ word_at(4 * g + l)) * 0x100000001b3ull;
      lane[l] ^= lane[l] >> 29;
    }
  }
}

// A digest of a long list of 64-bit words: AddLanes over the whole groups,
// the remaining words and the lanes finished by StableHasher.
inline uint64_t LaneDigest(std::span<const int64_t> words) {
  uint64_t lane[4] = {1, 2, 3, 4};
  const size_t n = words.size();
  AddLanes(
      n / 4, [&](size_t i) { return static_cast<uint64_t>(words[i]); }, lane);
  StableHasher h(n);
  for (size_t i = n / 4 * 4; i < n; ++i) h.Add(static_cast<uint64_t>(words[i]));
  for (uint64_t l : lane) h.Add(l);
  return h.digest();
}

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_STABLE_HASH_H_
