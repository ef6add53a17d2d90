#include "sim/run_estimate.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/dtype.h"
#include "dispatch/fused_launch.h"
#include "dispatch/layer_boundary.h"
#include "dispatch/pr30700_policy.h"
#include "dispatch/workspace.h"
#include "sim/memory/sim_context.h"
#include "sim/replica/call_count.h"
#include "sim/runtime/fiber.h"
#include "sim/scenario/hardware_model.h"

namespace lockstep {
namespace {

// Measured on x86-64 with g++ 12 -O2 (docs/LIMITS.md), rounded up.
constexpr uint64_t kBaseBytes = uint64_t{32} << 20;  // the process, catalogue, layout
constexpr uint64_t kRankStateBytes = 4096;           // runtime, coordinators, clocks
constexpr uint64_t kObjectRankBytes = 1024;          // backends of one group object, per rank
// Lamport buffers + hops, per member pair (measured 133 and 770 since a
// slot is 48 bytes: docs/LIMITS.md).
constexpr uint64_t kOneShotPairBytes = 160;
constexpr uint64_t kTwoShotPairBytes = 896;  // two-shot: twice the pieces per buffer
// A workspace no call pushes into (the fused kernel cannot reach its group):
// its members' state (one TP group of 16 384 ranks: 257 MB with the
// workspace, 232 MB without).
constexpr uint64_t kIdleMemberBytes = 2048;
constexpr uint64_t kCustomPairBytes = 64;   // per-block flags, per member pair
constexpr int kCustomMaxWorld = 32;         // no custom all-reduce from here (serving_args.cc)
constexpr uint64_t kCommMemberBytes = 512;  // NCCL communicator, per member
constexpr uint64_t kDecisionBytes = 256;    // one CallLog (176 B) and vector growth
constexpr uint64_t kTraceEventBytes = 224;  // TraceEvent (72 B), kept twice, growth
constexpr uint64_t kExactContributionBytes = 32;    // one Contribution of an interned set
constexpr uint64_t kNumericRankBytesPerElem = 24;   // live arrays of one rank, per element
constexpr uint64_t kNumericCheckBytesPerElem = 32;  // the double-precision reference check

uint64_t Mul(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? ~uint64_t{0} : out;
}
uint64_t Add(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? ~uint64_t{0} : out;
}

// Whether any policy builds a custom all-reduce on `object` (an upper bound:
// SGLang 0.5.23's objects and PR #30700's).
bool HasCustomAllReduce(const GroupObject& object) {
  for (GroupRole r : object.roles) {
    if (r == GroupRole::kTp || r == GroupRole::kAttnTp || r == GroupRole::kMoeTp ||
        r == GroupRole::kAttnCp || r == GroupRole::kMoeDp) {
      return true;
    }
  }
  return false;
}

// The largest token count any rank's call can carry: the workload's largest,
// padded over attention-DP groups, plus what a token-count fault adds.
uint64_t MaxTokensPerCall(const Scenario& s, const ParallelWidths& w) {
  int64_t largest = 1;
  for (int64_t t : s.workload.tokens) largest = std::max(largest, t);
  // A captured CUDA graph runs at its size, and a replay pads up to one.
  for (int64_t t : s.workload.cuda_graph_tokens) largest = std::max(largest, t);
  for (const auto& group : s.workload.dp_tokens) {
    for (int64_t t : group) largest = std::max(largest, t);
  }
  uint64_t skew = 0;
  for (const FaultSpec& f : s.faults) {
    if (f.kind != "token_count_view") continue;
    int64_t delta = 1;
    if (auto it = f.params.find("delta"); it != f.params.end()) {
      (void)absl::SimpleAtoi(it->second, &delta);
    }
    skew = Add(skew, static_cast<uint64_t>(std::max<int64_t>(delta, 0)));
  }
  const uint64_t padded = Mul(static_cast<uint64_t>(largest),
                              static_cast<uint64_t>(s.parallel.dp_attention ? w.attn_dp : 1));
  return Add(padded, Mul(skew, static_cast<uint64_t>(w.attn_dp)));
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  if (bytes == ~uint64_t{0}) return "more than 16 EiB";
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(units)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrFormat("%d bytes", bytes)
                   : absl::StrFormat("%.*f %s", value < 10 ? 1 : 0, value, units[unit]);
}

std::string MemoryEstimate::Describe(size_t max_parts) const {
  std::vector<std::string> shown;
  for (size_t i = 0; i < parts.size() && i < max_parts; ++i) {
    if (parts[i].bytes == 0) break;
    shown.push_back(absl::StrFormat("%s %s", parts[i].what, FormatBytes(parts[i].bytes)));
  }
  return absl::StrFormat("%s (%s)", FormatBytes(total), absl::StrJoin(shown, "; "));
}

MemoryEstimate EstimateRunMemory(const Scenario& s, const ParallelLayout& layout,
                                 const SimOptions& options) {
  const ParallelWidths& w = layout.widths();
  const auto world = static_cast<uint64_t>(layout.world_size());
  const auto& objects = layout.objects();
  MemoryEstimate e;
  auto part = [&](std::string what, uint64_t bytes) {
    e.parts.push_back({std::move(what), bytes});
  };

  part("process and catalogue", kBaseBytes);
  part(absl::StrFormat("fiber stacks and rank state (%d ranks x %s)", world,
                       FormatBytes(Fiber::kDefaultStackBytes + kRankStateBytes)),
       Mul(world,
           Fiber::kDefaultStackBytes + kRankStateBytes + Mul(objects.size(), kObjectRankBytes)));

  // Groups: a fused workspace and a custom all-reduce hold state for every
  // pair of members (each member's buffers receive every peer's pushes) once
  // calls use them. Under a policy that votes a workspace's initialisation
  // across its members (SGLang's, PR #30700's), a group the fused kernel
  // cannot reach (wider than it serves, or across the network) fails the
  // vote and never pushes into its workspace: its members' state is all it
  // holds. Mutants may skip the vote (init-failure-without-vote), and a
  // fault may bind a workspace to another group: then every workspace counts
  // as used. No group of 32 ranks or more can use a custom all-reduce under
  // any policy (CustomPredicatesHold), whose flags appear at a member's first
  // barrier.
  const HardwareModel hardware(s.hardware);
  const std::string& policy = options.policy.empty() ? s.dispatch.policy : options.policy;
  const bool votes = policy == "reference" || policy == kPr30700PolicyName;
  uint64_t fused = 0, custom = 0, comms = 0;
  int largest_fused = 0, largest_custom = 0;
  // The MoE workspace's group under either policy (an upper bound).
  const GroupRole moe_role = PostExpertsReductionRole(w);
  const GroupRole moe_tag_role = MoeTagRole(w);
  const uint64_t tokens = MaxTokensPerCall(s, w);
  for (const GroupObject& object : objects) {
    const bool attn_ws = std::find(object.roles.begin(), object.roles.end(), GroupRole::kAttnTp) !=
                         object.roles.end();
    const bool moe_ws =
        std::find(object.roles.begin(), object.roles.end(), moe_role) != object.roles.end() ||
        std::find(object.roles.begin(), object.roles.end(), moe_tag_role) != object.roles.end();
    // A workspace may be bound to another equal-size group by a fault: the
    // object's own sizes are the sizes either way.
    // A dense model never pushes into its MoE workspace: only its hop table
    // (8 bytes a pair) is there.
    // Unset: SGLang's auto-enable may turn it on (an upper bound).
    const bool fusion_on = s.dispatch.fused_backend != FusionBackendFlag::kNone;
    const uint64_t workspaces =
        fusion_on ? uint64_t{attn_ws ? 1u : 0u} + uint64_t{moe_ws && s.model.moe ? 1u : 0u} : 0;
    const uint64_t idle_workspaces = fusion_on && moe_ws && !s.model.moe ? 1u : 0u;
    const bool has_custom = s.dispatch.custom_allreduce && HasCustomAllReduce(object);
    for (GroupId id : object.members) {
      const int n = layout.GroupSize(id);
      if (n <= 1) continue;
      const uint64_t pairs = Mul(static_cast<uint64_t>(n), static_cast<uint64_t>(n));
      comms = Add(comms, Mul(static_cast<uint64_t>(n), kCommMemberBytes));
      const bool pushed_into =
          !votes || !s.faults.empty() || hardware.FusedKernelReachable(layout.Peers(id));
      if (workspaces > 0 && !pushed_into) {
        fused = Add(fused, Mul(workspaces, Mul(static_cast<uint64_t>(n), kIdleMemberBytes)));
      } else if (workspaces > 0) {
        // Two-shot splits each message among the members: twice the pieces.
        const uint64_t message = Mul(Mul(tokens, static_cast<uint64_t>(s.model.hidden)),
                                     static_cast<uint64_t>(DTypeSize(s.dispatch.dtype)));
        // The tuner may pick the lowest cut-over (workload.autotune).
        const FusedTactic lowest = s.workload.autotune ? FusedTactic{0} : FusedTactic{};
        const bool two_shot = message > static_cast<uint64_t>(TunedOneShotMaxBytes(n, lowest));
        fused = Add(fused,
                    Mul(workspaces, Mul(pairs, two_shot ? kTwoShotPairBytes : kOneShotPairBytes)));
        largest_fused = std::max(largest_fused, n);
      }
      if (idle_workspaces > 0) fused = Add(fused, Mul(static_cast<uint64_t>(n), kIdleMemberBytes));
      if (has_custom && n < kCustomMaxWorld) {
        custom = Add(custom, Mul(pairs, kCustomPairBytes));
        largest_custom = std::max(largest_custom, n);
      }
    }
  }
  part(largest_fused > 0
           ? absl::StrFormat("fused workspaces (largest group %d ranks; grows with its square)",
                             largest_fused)
           : std::string("fused workspaces (no group the fused kernels reach)"),
       fused);
  part(absl::StrFormat("custom all-reduce flags (largest group %d ranks; grows with its square)",
                       largest_custom),
       custom);
  part("NCCL communicators", comms);

  // Records kept per call of every rank.
  const uint64_t calls = Mul(MaxCallsPerRank(s, w), world);
  if (options.keep_decisions) {
    part(absl::StrFormat("decision records (%d calls of all ranks: steps x layers x ranks)", calls),
         Mul(calls, kDecisionBytes));
  }
  if (options.keep_trace) {
    part(absl::StrFormat("trace events (%d calls; --trace)", calls), Mul(calls, kTraceEventBytes));
  }
  if (options.exact_provenance) {
    // Every partial sum of a reduction is an interned set of its contributors.
    int largest = 1;
    for (size_t id = 0; id < layout.num_peer_sets(); ++id) {
      largest = std::max(largest, layout.GroupSize(GroupId{static_cast<uint32_t>(id)}));
    }
    const auto n = static_cast<uint64_t>(largest);
    part(absl::StrFormat("exact contributor sets (--exact; groups of %d ranks)", largest),
         Mul(calls, Mul(Mul(n, n), kExactContributionBytes / 2)));
  }
  if (s.workload.data != DataMode::kProvenance) {
    // The kept elements of the largest buffer (sampled: 8 in every stride,
    // at least one block).
    const uint64_t buffer = Mul(tokens, static_cast<uint64_t>(s.model.hidden));
    const NumericSampler sampler = SamplerFor(s);
    const uint64_t elems = sampler.all() ? buffer
                                         : Mul(buffer / static_cast<uint64_t>(sampler.stride()) + 1,
                                               static_cast<uint64_t>(sampler.block));
    part(absl::StrFormat(
             "%s data (%d ranks x %d elements = tokens x hidden%s; data: "
             "provenance needs none)",
             s.workload.data == DataMode::kSampled ? "sampled" : "numeric", world, elems,
             sampler.all() ? "" : absl::StrFormat(" / %d x %d", sampler.stride(), sampler.block)),
         Add(Mul(world, Mul(elems, kNumericRankBytesPerElem)),
             Mul(elems, kNumericCheckBytesPerElem)));
  }
  std::stable_sort(e.parts.begin(), e.parts.end(),
                   [](const MemoryEstimate::Part& a, const MemoryEstimate::Part& b) {
                     return a.bytes > b.bytes;
                   });
  for (const MemoryEstimate::Part& p : e.parts) e.total = Add(e.total, p.bytes);
  return e;
}

}  // namespace lockstep
