// The decision record: what one all-reduce call chose and why, kept for every
// call so that ranks can be compared (by the simulator exactly, on hardware by
// an all-gathered fingerprint).

#ifndef LOCKSTEP_DISPATCH_DECISION_H_
#define LOCKSTEP_DISPATCH_DECISION_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/group_layout.h"
#include "dispatch/tensor.h"
#include "dispatch/workspace.h"

namespace lockstep {

// The backends of the all-reduce chain, in the order they are tried. kSkip is
// a group of one rank, where there is nothing to reduce.
enum class BackendKind : uint8_t { kSkip = 0, kFused, kCustom, kNccl };
inline constexpr int kNumBackendKinds = 4;
std::string_view BackendKindName(BackendKind kind);  // "skip", "fused", "custom", "nccl"

// The algorithm of the fused kernel or of the custom all-reduce. Every rank of
// a group must run the same one: the slot layout of the Lamport buffers, and
// the custom all-reduce's workspaces and synchronisation, depend on it.
// The custom all-reduce's are SGLang 0.5.23's CustomAllReduceV2 algorithms
// (dispatch/custom_launch.h); its v1 runs kNone (the staged one-stage).
enum class Algorithm : uint8_t {
  kNone = 0,
  kOneShot,
  kTwoShot,
  kOneShotPush,  // custom: "1shot_push"
  kTwoShotPush,  // custom: "2shot_push"
  kOneShotPull,  // custom: "1shot_pull"
  kTwoShotPull,  // custom: "2shot_pull"
};
// "none", "one_shot", "two_shot", "1shot_push", "2shot_push", "1shot_pull", "2shot_pull"
std::string_view AlgorithmName(Algorithm algorithm);

// How the fused kernel runs its Lamport protocol, and the custom all-reduce
// its barrier (DecisionRecord::kernel_flags): each bit is one safeguard of the
// protocol (kernels/protocol/lamport.h, block_barrier.h), and the reference
// runs them all; a mutant clears one (docs/FAULTS.md).
enum KernelFlag : uint8_t {
  kSanitizeInputs = 1,  // rewrite −0 inputs to +0 before pushing them
  kExactSentinel = 2,   // sentinel test on exact bits (else `v == 0 && signbit(v)`)
  kVerifyClear = 4,     // read back the cleared buffer; a clear that did not take is an error
  kClearPreviousFootprint = 8,  // clear what the previous call wrote (else this call's size)
  kRankOrderSum = 16,           // sum the slots in rank order (else from the rank's own)
  kThreeBufferRotation = 32,    // rotate three buffers (else two)
  kBoundedWaits = 64,           // every poll bounded by the wait budget (else unbounded)
  kReleaseFlags = 128,  // custom: a release fence before the barrier flags (staged data first)
};
inline constexpr uint8_t kReferenceKernelFlags = kSanitizeInputs | kExactSentinel | kVerifyClear |
                                                 kClearPreviousFootprint | kRankOrderSum |
                                                 kThreeBufferRotation | kBoundedWaits;
inline constexpr uint8_t kReferenceCustomKernelFlags = kReleaseFlags;

// Every check a backend's CanUse evaluates, named as the decision record and
// the reports print them.
enum class Predicate : uint8_t {
  // Fused kernel (kAllReduce on a fusion workspace), in evaluation order.
  kGroupTagged,           // the group owns a fusion workspace
  kLibraryAvailable,      // the fused-kernel library loaded on every rank
  kTwoDimensional,        // tensor is [tokens, hidden]
  kContiguous,            // tensor is contiguous
  kWorkspaceInitialized,  // the workspace rendezvous succeeded on every rank
  kWorkspaceWorldSize,    // workspace world size == group world size
  kWorkspacePeers,        // workspace peer set == group peer set (exactly)
  kTokensFit,             // tokens <= workspace max tokens
  kHiddenFits,            // hidden <= workspace hidden
  kDtypeMatches,          // dtype == workspace dtype
  // Custom all-reduce.
  kCustomAvailable,   // custom all-reduce was created for this group
  kBytesAligned,      // bytes % 16 == 0
  kCustomContiguous,  // tensor is (weakly) contiguous
  kBytesBelowMax,     // bytes < custom max size
  kCustomWorldSize,   // world size in {2, 4, 6, 8}
  kNvlinkOrWorldTwo,  // world size 2, or every pair linked by NVLink
  kSameNode,          // every rank of the group on one node
  // Fused kAllReduce, by FlashInfer backend (SGLang 0.5.23).
  kHiddenAligned,  // a row is whole 16-byte vectors (lockstep's kernels; SGLang's mnnvl check)
  kElementsFit,    // trtllm: tokens * hidden <= max_tokens * workspace hidden
  // Fused AR + residual + RMSNorm on an explicit workspace (SGLang 0.5.23's
  // flashinfer_ar_fusion_applies and flashinfer_allreduce_residual_rmsnorm).
  kNormFusionPath,     // a FlashInfer fusion backend other than cutedsl, no DP attention
  kNormFusable,        // the model's norm is a plain RMSNorm after a plain residual add
  kTokensInNormRange,  // 0 < tokens <= the fused norm's batch limit (2048)
};
inline constexpr int kNumPredicates = 22;
std::string_view PredicateName(Predicate predicate);
// The backend whose CanUse evaluates `predicate` (the fused norm's are the
// fused backend's).
BackendKind PredicateBackend(Predicate predicate);

// The record of one all-reduce call on one rank: the backend and algorithm
// chosen, and every predicate and predicate input by name. A plain value of a
// few cache lines, filled on the hot path; formatting happens only on demand.
struct DecisionRecord {
  uint64_t seq = 0;  // the call's index on its group coordinator, from 0
  GroupId group;
  int group_world_size = 0;
  BackendKind backend = BackendKind::kNccl;
  Algorithm algorithm = Algorithm::kNone;
  int32_t blocks = 0;        // grid size of the fused or custom kernel
  bool fp32_acc = false;     // fused-kernel accumulation type
  uint8_t kernel_flags = 0;  // KernelFlag bits of the fused or custom kernel
  // The fused kernel runs the residual add and RMSNorm too (else the caller
  // normalises after the all-reduce).
  bool norm_fused = false;
  int64_t norm_max_tokens = 0;  // the fused norm's batch limit, when evaluated
  // Custom all-reduce: the call reads CUDA-graph-registered inputs (a pull
  // algorithm captured into a graph) rather than its workspace.
  bool graph_inputs = false;
  CallDesc call;

  uint32_t evaluated = 0;  // bit p: predicate p was evaluated
  uint32_t held = 0;       // bit p: predicate p held

  // Inputs of the fused predicates (valid once evaluated).
  WorkspaceKind hint = WorkspaceKind::kNone;
  bool library_available = false;
  bool workspace_initialized = false;
  GroupId workspace_group;
  int workspace_world_size = 0;
  WorkspaceCapacity workspace_capacity;
  uint32_t workspace_generation = 0;
  // Inputs of the custom all-reduce predicates.
  bool custom_available = false;
  int64_t custom_max_bytes = 0;
  bool full_nvlink = false;
  bool same_node = false;

  // Records `predicate` with result `value` and returns `value`, so checks
  // read as `if (!record.Check(Predicate::kContiguous, d.contiguous)) ...`.
  bool Check(Predicate predicate, bool value) {
    const uint32_t bit = 1u << static_cast<unsigned>(predicate);
    evaluated |= bit;
    held = value ? (held | bit) : (held & ~bit);
    return value;
  }
  bool Evaluated(Predicate p) const { return (evaluated >> static_cast<unsigned>(p)) & 1u; }
  bool Held(Predicate p) const { return (held >> static_cast<unsigned>(p)) & 1u; }
};

// The first predicate of `backend` that was evaluated and failed: the reason
// the chain moved past it. nullopt if it was not rejected by a predicate.
std::optional<Predicate> FirstFailedPredicate(const DecisionRecord& record, BackendKind backend);

// "workspace_initialized=false", "tokens=300 max_tokens=256 -> false": the
// inputs of one predicate and its result. `layout`, when given, prints peer
// sets as rank lists instead of ids.
std::string DescribePredicate(const DecisionRecord& record, Predicate predicate,
                              const ParallelLayout* layout = nullptr);

// One line: the backend and algorithm chosen and, for every backend passed
// over, the predicate that refused it. E.g.
// "nccl (fused refused: workspace_initialized=false; custom refused: ...)".
std::string ExplainDecision(const DecisionRecord& record, const ParallelLayout* layout = nullptr);

// Predicates whose evaluation or result differ between two records of the
// same call on two ranks, in evaluation order.
std::vector<Predicate> DifferingPredicates(const DecisionRecord& a, const DecisionRecord& b);

// One field of a decision record, as reports compare it. DescribeDifferences
// and DecisionFingerprint both read this one list, so whatever makes two
// fingerprints differ is named: every predicate (evaluated and held), then the
// call, the launch choices and the workspace the call was checked against.
struct DecisionField {
  std::string_view name;  // "tokens"; a predicate's PredicateName()
  // Part of what every rank of the group must agree on (the fingerprint).
  // Context a decision must not depend on (tracing, graph capture) is named
  // when it differs but not fingerprinted.
  bool fingerprinted;
  uint64_t (*value)(const DecisionRecord&);
  // "tokens=5", "workspace_initialized=false": the field on one side.
  std::string (*describe)(const DecisionRecord&, const ParallelLayout*);
};
std::span<const DecisionField> DecisionFields();

// What differs between `mine` and `other` (two ranks' records of the same
// call), named from `mine`'s side, in DecisionFields() order: predicates
// ("workspace_initialized=false", "tokens_fit not evaluated"), then call
// inputs and launch choices ("tokens=5", "blocks=4"). Empty when the records
// agree; never empty when their fingerprints differ.
std::vector<std::string> DescribeDifferences(const DecisionRecord& mine,
                                             const DecisionRecord& other,
                                             const ParallelLayout* layout = nullptr);

// A 64-bit digest of the fingerprinted DecisionFields(): everything a
// rank-invariant decision must agree on. Stable across runs and machines (no
// seeded hashing).
uint64_t DecisionFingerprint(const DecisionRecord& record);
// Whether two records agree on every fingerprinted field (what equal
// fingerprints stand for, without hashing: a few times cheaper, for callers
// that compare many records).
bool SameDecision(const DecisionRecord& a, const DecisionRecord& b);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_DECISION_H_
