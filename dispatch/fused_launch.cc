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

int FusedGridBlocks(int64_t bytes) {
  const int64_t blocks = (bytes + kFusedBytesPerBlock - 1) / kFusedBytesPerBlock;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, kFusedMaxBlocks));
}

int CustomGridBlocks(int64_t bytes) {
  const int64_t blocks = (bytes + kCustomBytesPerBlock - 1) / kCustomBytesPerBlock;
  return static_cast<int>(std::clamp<int64_t>(blocks, 1, kCustomMaxBlocks));
}

}  // namespace lockstep
