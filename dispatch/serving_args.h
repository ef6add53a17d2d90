// What SGLang 0.5.23 resolves from its server arguments and the platform,
// besides the layout: the FlashInfer fusion backend (and whether it is on by
// default), the custom all-reduce generation and its limits, and the
// boundary reduction under attention DP. Every function is pure and reads
// only what every rank shares, so every rank resolves the same.
//
//   ServingArgs args;  // as launched: no --flashinfer-allreduce-fusion-backend
//   absl::StatusOr<FusionBackend> b = ResolveFusionBackend(
//       args, Platform{.sm = 90, .nodes = 1}, "DeepseekV3ForCausalLM", widths);
//   // *b == FusionBackend::kTrtllm: auto-enabled, trtllm on SM90 single node

#ifndef LOCKSTEP_DISPATCH_SERVING_ARGS_H_
#define LOCKSTEP_DISPATCH_SERVING_ARGS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "dispatch/backend.h"
#include "dispatch/parallel_config.h"

namespace lockstep {

// --flashinfer-allreduce-fusion-backend as given (kUnset: not given, and
// SGLang's auto-enable decides).
enum class FusionBackendFlag : uint8_t { kUnset, kNone, kAuto, kTrtllm, kMnnvl, kCutedsl };
// The backend a process runs with.
enum class FusionBackend : uint8_t { kNone, kTrtllm, kMnnvl, kCutedsl };
std::string_view FusionBackendFlagName(FusionBackendFlag flag);  // "unset", "none", "auto", ...
absl::StatusOr<FusionBackendFlag> ParseFusionBackendFlag(std::string_view name);
std::string_view FusionBackendName(FusionBackend backend);  // "none", "trtllm", ...

// --boundary-reduction (the FFN-exit reduction under attention DP).
enum class BoundaryReduction : uint8_t { kAuto, kAr, kRs, kRsv, kRsRsv };
std::string_view BoundaryReductionName(BoundaryReduction reduction);  // "auto", "ar", "rs+rsv"
absl::StatusOr<BoundaryReduction> ParseBoundaryReduction(std::string_view name);

// The machine every rank runs on.
struct Platform {
  int sm = 90;    // compute capability major*10 (90: H100/H200, 100: B200/GB200)
  int nodes = 1;  // hosts the replica spans
};

struct ServingArgs {
  FusionBackendFlag fusion_backend = FusionBackendFlag::kUnset;
  bool disable_custom_all_reduce = false;
  // SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2 (default on) and its size bound,
  // SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB (environ.py:1532,1535 @ 0.5.23).
  bool custom_all_reduce_v2 = true;
  int64_t custom_all_reduce_v2_max_bytes = int64_t{16} << 20;
  BoundaryReduction boundary_reduction = BoundaryReduction::kAuto;
};

// Whether SGLang 0.5.23 turns the fusion on by itself when the flag is not
// given (arg_groups/overrides.py:955-1003): an architecture of its list, SM90
// or SM10x, tp > 1, no attention DP, one node or SM10x, no all-to-all MoE.
bool FusionAutoEnabled(std::string_view architecture, const Platform& platform,
                       const ParallelWidths& widths);

// The backend a process runs: the flag (or the auto-enable) resolved as
// flashinfer_comm_fusion.py:46-100 @ 0.5.23 does. InvalidArgument with
// SGLang's reason where it refuses (SM90 across nodes, cutedsl off
// Blackwell, no SM90/SM10x).
absl::StatusOr<FusionBackend> ResolveFusionBackend(const ServingArgs& args,
                                                   const Platform& platform,
                                                   std::string_view architecture,
                                                   const ParallelWidths& widths);

// Whether the groups are tagged for the all-reduce-only kAllReduce path:
// any backend but cutedsl (distributed/bootstrap.py:257-261 @ 0.5.23).
constexpr bool FusedAllReduceOnlyEnabled(FusionBackend backend) {
  return backend == FusionBackend::kTrtllm || backend == FusionBackend::kMnnvl;
}

// The capacity rule of a backend's kAllReduce predicates.
FusedCapacityRule CapacityRuleOf(FusionBackend backend);

// The custom all-reduce's agreed limits for `args` on `platform` (its
// generation, served world sizes, size bound); `available` false when it is
// disabled. The group facts (world size, NVLink, node) are the caller's.
CustomAgreedState CustomAllReduceLimits(const ServingArgs& args, const Platform& platform);

// The generation a group's custom all-reduce gets (get_custom_all_reduce_cls,
// device_communicators/custom_all_reduce.py:387-398 @ 0.5.23): v2 where it
// admits the group — a served world size, and full NVLink on one node or one
// NVLink clique across nodes (custom_all_reduce_v2.py:582-597) — else the
// legacy v1, whose own checks (world 2, 4, 6, 8; NVLink beyond two ranks;
// one node) the predicates apply. `limits` comes from CustomAllReduceLimits.
CustomAgreedState ChooseCustomGeneration(const CustomAgreedState& limits, int world, bool same_node,
                                         bool full_nvlink, bool one_clique);
// --boundary-reduction auto, resolved per model (arg_groups/boundary_reduction.py:28-54
// @ 0.5.23): "ar" for dense Qwen3, "rs+rsv" otherwise.
BoundaryReduction ResolveBoundaryReduction(BoundaryReduction flag, std::string_view architecture);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_SERVING_ARGS_H_
