// How the fused all-reduce kernel is launched for a message: algorithm and
// grid. Every rank of a group computes these from the same agreed inputs, so
// every rank runs the same protocol with the same slot layout and flag count.

#ifndef LOCKSTEP_DISPATCH_FUSED_LAUNCH_H_
#define LOCKSTEP_DISPATCH_FUSED_LAUNCH_H_

#include <cstdint>

#include "dispatch/decision.h"

namespace lockstep {

// Largest message (bytes per rank) sent one-shot for a group of `world_size`
// ranks. One-shot pushes the whole message to every peer and reduces in one
// round: cheapest in latency, but its traffic grows with world_size - 1.
// Two-shot (reduce-scatter by ownership, then all-gather) sends about
// 2 (world - 1) / world of the message in two rounds and wins for large
// messages. The thresholds are a function of the message size and the world
// size only: rank-invariant by construction.
int64_t OneShotMaxBytes(int world_size);

// One-shot when bytes <= OneShotMaxBytes(world_size), else two-shot.
Algorithm SelectFusedAlgorithm(int64_t bytes, int world_size);

// The start-up autotuner (workload.autotune; docs/FAULTS.md, "Autotuning"):
// the fused kernel's tactic is the one-shot/two-shot cut-over, one of
// kTunerCandidates scalings of OneShotMaxBytes (a quarter, as built, four
// times). Candidate kBuiltInTactic is the table itself, what a rank uses
// when no tuner ran. Every member of a group must use the same one: a rank
// on another cut-over runs another protocol for the messages in between
// (FlashInfer #3186/#3187, SGLang #23317: tactics picked per rank).
inline constexpr int kTunerCandidates = 3;
inline constexpr int kBuiltInTactic = 1;
struct FusedTactic {
  int candidate = kBuiltInTactic;  // 0 .. kTunerCandidates - 1
  friend bool operator==(const FusedTactic&, const FusedTactic&) = default;
};
// The cut-over of `tactic` for a group of `world_size` ranks.
int64_t TunedOneShotMaxBytes(int world_size, FusedTactic tactic);
// One-shot when bytes <= TunedOneShotMaxBytes(world_size, tactic).
Algorithm SelectFusedAlgorithm(int64_t bytes, int world_size, FusedTactic tactic);
// The time the tuner's profile run of `candidate` measures on a rank, in ns
// (a model: the built-in cut-over is fastest; `favoured`, when it is a
// candidate, is what this rank's own timings make fastest — a busy
// neighbour, a throttled clock; RankLocalState::tuner_favoured).
int64_t TunerProfileNs(int candidate, int favoured);

// Grid size (thread blocks per rank) of the fused kernel: one block per
// kFusedBytesPerBlock of message, between 1 and kFusedMaxBlocks. A function of
// the message size alone, never of the local device's SM count: per-block
// flag protocols need every rank to launch the same grid (vLLM #43616).
// 8 KiB is one 16-byte vector per thread of a 512-thread block: on H200 one
// SM's stores into a peer's memory bound a small message's latency, so a
// message is spread over as many SMs as it has 8 KiB pieces (measured in
// docs/PERFORMANCE.md).
inline constexpr int64_t kFusedBytesPerBlock = 8 * 1024;
inline constexpr int kFusedMaxBlocks = 128;
int FusedGridBlocks(int64_t bytes);

// Grid size of the custom all-reduce (vLLM's rule: 512 threads of 16 bytes
// per block, at most 36 blocks). Its barrier has one flag per block, so this
// too must be the same on every rank.
inline constexpr int64_t kCustomBytesPerBlock = 512 * 16;
inline constexpr int kCustomMaxBlocks = 36;
int CustomGridBlocks(int64_t bytes);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_FUSED_LAUNCH_H_
