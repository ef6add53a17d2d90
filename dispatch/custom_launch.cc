#include "dispatch/custom_launch.h"

#include <algorithm>

namespace lockstep {
namespace {

constexpr int64_t kKiB = int64_t{1} << 10;
constexpr int64_t kMiB = int64_t{1} << 20;
// custom_all_reduce_v2.py:70: both workspaces are sized in whole KiB.
constexpr int64_t kAlignBytes = 1024;

struct Row {
  int world;
  // (1shot_push, 1shot_pull, 2shot_pull, mc.max_bytes) as the table lists
  // them, graph then eager; 2shot_push is set per world.
  int64_t graph[4];
  int64_t eager[4];
  int64_t two_shot_push;
};

// configs/custom_all_reduce_v2.py:266-312 @ 0.5.23 (_sm90_configs).
constexpr Row kSm90[] = {
    {2, {16 * kMiB, 128 * kMiB, 128 * kMiB, 0}, {32 * kMiB, 128 * kMiB, 128 * kMiB, 0}, 0},
    {3, {1280 * kKiB, 1280 * kKiB, 128 * kMiB, 0}, {3 * kMiB, 3 * kMiB, 16 * kMiB, 0}, 0},
    {4, {384 * kKiB, 384 * kKiB, 128 * kMiB, 0}, {896 * kKiB, 896 * kKiB, 32 * kMiB, 32 * kMiB}, 0},
    {5, {192 * kKiB, 192 * kKiB, 32 * kMiB, 0}, {384 * kKiB, 384 * kKiB, 32 * kMiB, 32 * kMiB}, 0},
    {6,
     {128 * kKiB, 128 * kKiB, 32 * kMiB, 32 * kMiB},
     {192 * kKiB, 192 * kKiB, 32 * kMiB, 32 * kMiB},
     0},
    {7,
     {128 * kKiB, 128 * kKiB, 32 * kMiB, 32 * kMiB},
     {128 * kKiB, 128 * kKiB, 32 * kMiB, 32 * kMiB},
     0},
    {8,
     {128 * kKiB, 128 * kKiB, 32 * kMiB, 128 * kMiB},
     {128 * kKiB, 128 * kKiB, 128 * kMiB, 128 * kMiB},
     0},
};

// configs/custom_all_reduce_v2.py:142-203 @ 0.5.23 (_sm100_configs).
constexpr Row kSm100[] = {
    {2, {8 * kMiB, 32 * kMiB, 128 * kMiB, 0}, {16 * kMiB, 128 * kMiB, 128 * kMiB, 0}, 0},
    {3, {4 * kMiB, 4 * kMiB, 128 * kMiB, 0}, {8 * kMiB, 8 * kMiB, 32 * kMiB, 0}, 0},
    {4, {640 * kKiB, 640 * kKiB, 128 * kMiB, 0}, {640 * kKiB, 640 * kKiB, 32 * kMiB, 0}, 8 * kMiB},
    {5, {1536 * kKiB, 1536 * kKiB, 128 * kMiB, 0}, {2 * kMiB, 2 * kMiB, 32 * kMiB, 32 * kMiB}, 0},
    {6, {1 * kMiB, 1 * kMiB, 128 * kMiB, 0}, {1280 * kKiB, 1280 * kKiB, 64 * kMiB, 64 * kMiB}, 0},
    {7, {640 * kKiB, 640 * kKiB, 128 * kMiB, 0}, {1 * kMiB, 1 * kMiB, 64 * kMiB, 64 * kMiB}, 0},
    {8,
     {256 * kKiB, 256 * kKiB, 128 * kMiB, 128 * kMiB},
     {256 * kKiB, 256 * kKiB, 128 * kMiB, 128 * kMiB},
     8 * kMiB},
    {16,
     {256 * kKiB, 256 * kKiB, 128 * kMiB, 128 * kMiB},
     {256 * kKiB, 256 * kKiB, 128 * kMiB, 128 * kMiB},
     0},
};

CustomV2Heuristic FromRow(const int64_t (&t)[4], int64_t two_shot_push) {
  CustomV2Heuristic h;
  h.one_shot_push = t[0];
  h.one_shot_pull = t[1];
  h.two_shot_pull = t[2];
  h.two_shot_push = two_shot_push;
  return h;
}

int64_t CeilAlign(int64_t n) { return (n + kAlignBytes - 1) / kAlignBytes * kAlignBytes; }

// configs/custom_all_reduce_v2.py:90-99: a 2shot_push slot holds two halves of
// one ceil(bytes / world)-byte chunk, and its inverse.
int64_t TwoShotPushSlotBytes(int64_t bytes, int world) {
  const int64_t vectors = (bytes + 16 * world - 1) / (16 * world);
  return 32 * vectors;
}
int64_t TwoShotPushMaxBytes(int64_t slot_bytes, int world) {
  return int64_t{world} * 16 * (slot_bytes / 32);
}

}  // namespace

int64_t CustomV2Heuristic::MaxBytes() const {
  return std::max({one_shot_push, two_shot_push, one_shot_pull, two_shot_pull});
}

int PlatformSmCount(int sm) {
  if (sm >= 100 && sm < 110) return 148;
  return 132;
}

CustomV2Config CustomV2ConfigFor(int sm, int world, int64_t max_bytes) {
  CustomV2Config c;
  const int num_sm = PlatformSmCount(sm);
  const Row* row = nullptr;
  if (sm == 90) {
    for (const Row& r : kSm90) row = r.world == world ? &r : row;
    c.pull_blocks = 64;
  } else if (sm >= 100 && sm < 110) {
    for (const Row& r : kSm100) row = r.world == world ? &r : row;
    c.pull_blocks = world == 2 ? num_sm : 96;
  } else if (world >= 2 && world <= 16) {
    // The default for other architectures (configs/custom_all_reduce_v2.py:326-333).
    static constexpr Row kDefault = {0, {kMiB, kMiB, 16 * kMiB, 0}, {kMiB, kMiB, 16 * kMiB, 0}, 0};
    row = &kDefault;
    c.pull_blocks = num_sm;
  }
  if (row == nullptr) return CustomV2Config{};
  c.push_blocks = num_sm;
  c.graph = FromRow(row->graph, row->two_shot_push);
  c.eager = FromRow(row->eager, row->two_shot_push);

  // The workspaces CustomAllReduceV2.__init__ allocates (custom_all_reduce_v2.py:
  // 147-150, 175-181): what the tables want (AllReduceConfig.max_push_bytes,
  // max_pull_bytes — the multicast ranges count), clipped to the bound.
  const int64_t want_push = std::max({c.graph.one_shot_push, c.eager.one_shot_push,
                                      TwoShotPushSlotBytes(c.graph.two_shot_push, world),
                                      TwoShotPushSlotBytes(c.eager.two_shot_push, world)});
  const int64_t want_pull = std::max({c.graph.one_shot_pull, c.graph.two_shot_pull, row->graph[3],
                                      c.eager.one_shot_pull, c.eager.two_shot_pull, row->eager[3]});
  const int64_t push = CeilAlign(std::max(std::min(want_push, max_bytes), kAlignBytes));
  const int64_t pull = CeilAlign(std::max(std::min(want_pull, max_bytes), kAlignBytes));
  c.push_slot_bytes = push;
  c.pull_bytes = pull;
  // Heuristic.clip (configs/custom_all_reduce_v2.py:75-88).
  for (CustomV2Heuristic* h : {&c.graph, &c.eager}) {
    h->one_shot_push = std::min(h->one_shot_push, push);
    h->one_shot_pull = std::min(h->one_shot_pull, pull);
    h->two_shot_pull = std::min(h->two_shot_pull, pull);
    h->two_shot_push = std::min(h->two_shot_push, TwoShotPushMaxBytes(push, world));
  }
  return c;
}

Algorithm SelectCustomV2Algorithm(const CustomV2Config& config, int64_t bytes, bool graph) {
  const CustomV2Heuristic& h = graph ? config.graph : config.eager;
  if (bytes <= 0) return Algorithm::kNone;
  if (bytes <= h.one_shot_push) return Algorithm::kOneShotPush;
  if (bytes <= h.two_shot_push) return Algorithm::kTwoShotPush;
  if (bytes <= h.one_shot_pull) return Algorithm::kOneShotPull;
  if (bytes <= h.two_shot_pull) return Algorithm::kTwoShotPull;
  return Algorithm::kNone;
}

}  // namespace lockstep
