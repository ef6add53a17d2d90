// The simulator's only source of randomness: one seed, one generator, every
// choice drawn in program order. xoshiro256** seeded through splitmix64.

#ifndef LOCKSTEP_SIM_RUNTIME_RNG_H_
#define LOCKSTEP_SIM_RUNTIME_RNG_H_

#include <cstdint>

#include "dispatch/stable_hash.h"

namespace lockstep {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& s : state_) {
      x += 0x9e3779b97f4a7c15ull;
      s = StableHasher::Mix(x);
    }
  }

  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; the tiny bias is
  // irrelevant here and the result is the same on every platform).
  uint64_t Below(uint64_t n) {
    __extension__ using U128 = unsigned __int128;
    return static_cast<uint64_t>((static_cast<U128>(Next()) * n) >> 64);
  }

  // True with probability num/den.
  bool Chance(uint64_t num, uint64_t den) { return Below(den) < num; }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state_[4];
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_RUNTIME_RNG_H_
