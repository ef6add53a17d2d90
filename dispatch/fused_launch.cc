#include "dispatch/fused_launch.h"

#include <algorithm>

namespace lockstep {

int64_t OneShotMaxBytes(int world_size) {
  // Two H200s (docs/PERFORMANCE.md): one-shot is at least as fast as
  // two-shot up to 2 MiB and slower from 4 MiB. Wider groups push
  // (world - 1) copies, so their cut-over comes earlier (not yet measured).
  if (world_size <= 2) return int64_t{2} << 20;
  if (world_size <= 4) return int64_t{512} << 10;
  return int64_t{256} << 10;
}

Algorithm SelectFusedAlgorithm(int64_t bytes, int world_size) {
  return bytes <= OneShotMaxBytes(world_size) ? Algorithm::kOneShot : Algorithm::kTwoShot;
}

int64_t TunedOneShotMaxBytes(int world_size, FusedTactic tactic) {
  const int64_t built_in = OneShotMaxBytes(world_size);
  switch (tactic.candidate) {
    case 0:
      return built_in / 4;
    case 2:
      return built_in * 4;
    default:
      return built_in;
  }
}

Algorithm SelectFusedAlgorithm(int64_t bytes, int world_size, FusedTactic tactic) {
  return bytes <= TunedOneShotMaxBytes(world_size, tactic) ? Algorithm::kOneShot
                                                           : Algorithm::kTwoShot;
}

int64_t TunerProfileNs(int candidate, int favoured) {
  if (candidate == favoured) return 50;
  return candidate == kBuiltInTactic ? 100 : 200;
}

int FusedGridBlocks(int64_t bytes) {
  const int64_t blocks = (bytes + kFusedBytesPerBlock - 1) / kFusedBytesPerBlock;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, kFusedMaxBlocks));
}

int CustomGridBlocks(int64_t bytes) {
  const int64_t blocks = (bytes + kCustomBytesPerBlock - 1) / kCustomBytesPerBlock;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, kCustomMaxBlocks));
}

}  // namespace lockstep
