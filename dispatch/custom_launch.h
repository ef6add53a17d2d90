// How SGLang 0.5.23's custom all-reduce (CustomAllReduceV2) launches a call:
// which of its algorithms runs a message, on what grid, and whether it reads
// CUDA-graph-registered inputs. Every input is agreed (the group's world
// size, the platform, the configured bound, the message size, whether the
// call is being captured), so every member of a group makes the same choice.
//
// Reference: configs/custom_all_reduce_v2.py (the tuned tables, Heuristic,
// AllReduceConfig.clip) and custom_all_reduce_v2.py:141-193 (the tables
// clipped to the workspaces CustomAllReduceV2.__init__ allocates), 385-398
// (_pick_config), 456-491 (graph rows for pull algorithms only), all @ 0.5.23.

#ifndef LOCKSTEP_DISPATCH_CUSTOM_LAUNCH_H_
#define LOCKSTEP_DISPATCH_CUSTOM_LAUNCH_H_

#include <cstdint>

#include "dispatch/decision.h"

namespace lockstep {

// One dispatch context's size cut-overs (Heuristic): 1shot_push up to
// one_shot_push, then 2shot_push, 1shot_pull, 2shot_pull, each up to its
// threshold; above all of them the chain moves on to NCCL. Two adjacent
// thresholds equal disable the algorithm between them.
struct CustomV2Heuristic {
  int64_t one_shot_push = 0;
  int64_t two_shot_push = 0;
  int64_t one_shot_pull = 0;
  int64_t two_shot_pull = 0;
  // The largest message this context serves (the largest threshold).
  int64_t MaxBytes() const;
};

// The tuned configuration of one (platform, world size), clipped to the
// configured bound. Multicast (the table's `mc` ranges) is never used:
// lockstep does not model NVLink multicast and never runs it (docs/FIDELITY.md).
struct CustomV2Config {
  CustomV2Heuristic graph;  // calls captured into a CUDA graph
  CustomV2Heuristic eager;
  int push_blocks = 0;  // the push algorithms' grid (the per-block counter array)
  int pull_blocks = 0;  // the pull algorithms' grid (the per-block semaphores)
  // Bytes of one push slot SGLang allocates (max_push_size): the largest
  // 1shot_push message, or two halves of the largest 2shot_push chunk.
  int64_t push_slot_bytes = 0;
  // Bytes of the pull workspace SGLang allocates (max_pull_size, whole KiB):
  // the thresholds are clipped to it, so it may exceed the configured bound.
  int64_t pull_bytes = 0;
};

// Streaming multiprocessors of the platform's GPU, which SGLang reads from
// the local device (num_sm): H200 132, B200/GB200 148.
int PlatformSmCount(int sm);

// The configuration for a group of `world` ranks on compute capability `sm`
// (major * 10), its workspaces clipped to `max_bytes`
// (SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB). SM90 and SM10x have tuned tables;
// other platforms get SGLang's default (1 MiB one-shot cut-overs, 16 MiB).
// A world size without a table gets an empty configuration (serves nothing).
CustomV2Config CustomV2ConfigFor(int sm, int world, int64_t max_bytes);

// The algorithm a message of `bytes` runs (_pick_config), or Algorithm::kNone
// when the configuration serves no algorithm at that size.
Algorithm SelectCustomV2Algorithm(const CustomV2Config& config, int64_t bytes, bool graph);

// Whether `algorithm` is one of the push family (Lamport slots, no barrier)
// or the pull family (staged workspaces, counting barrier).
constexpr bool IsCustomPush(Algorithm a) {
  return a == Algorithm::kOneShotPush || a == Algorithm::kTwoShotPush;
}
constexpr bool IsCustomPull(Algorithm a) {
  return a == Algorithm::kOneShotPull || a == Algorithm::kTwoShotPull;
}

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_CUSTOM_LAUNCH_H_
