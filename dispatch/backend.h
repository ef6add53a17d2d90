// The backend seam: the only way the dispatch core talks to communication.
// The simulator (sim/) and the GPU runtime (kernels/cuda/, the hw runner) each
// implement it; the dispatch core never knows which one it runs on.

#ifndef LOCKSTEP_DISPATCH_BACKEND_H_
#define LOCKSTEP_DISPATCH_BACKEND_H_

#include <cstdint>

#include "absl/status/status.h"
#include "dispatch/custom_launch.h"
#include "dispatch/decision.h"
#include "dispatch/fused_launch.h"
#include "dispatch/rank_local_state.h"
#include "dispatch/tensor.h"
#include "dispatch/workspace.h"

namespace lockstep {

// One all-reduce backend of one group on one rank.
class CommBackend {
 public:
  virtual ~CommBackend() = default;

  virtual BackendKind kind() const = 0;

  // Whether this backend can serve `call`. Must be a pure function of state
  // every rank of the group agreed on and of the call's metadata, so that all
  // ranks answer alike: a rank that answers differently takes another backend
  // while its peers wait in this one, and the job hangs. Records every
  // predicate it evaluates, and their inputs, into `record`.
  virtual bool CanUse(const CallDesc& call, DecisionRecord& record) const = 0;

  // Reduces `tensor` in place over the group. The decision that chose this
  // backend is passed along (algorithm, launch shape). An error is returned
  // to the caller, never absorbed: the caller must not fall back to another
  // backend, because its peers are already inside this one.
  virtual absl::Status AllReduce(Tensor& tensor, const DecisionRecord& record) = 0;
};

// How a fused backend checks that a call fits its workspace: by the FlashInfer
// backend SGLang 0.5.23 resolved (--flashinfer-allreduce-fusion-backend), or
// per dimension as PR #30700's dispatch did.
enum class FusedCapacityRule : uint8_t {
  kPerDimension,  // tokens <= max_tokens, hidden <= hidden, same dtype (PR #30700)
  kTrtllm,        // tokens * hidden <= max_tokens * hidden, same dtype
  kMnnvl,         // hidden a whole number of 16-byte vectors, then per dimension
};
std::string_view FusedCapacityRuleName(FusedCapacityRule rule);  // "per_dimension", ...

// State of the fused kernel backend (FlashInfer/TRT-LLM kAllReduce on a fusion
// workspace) that every rank of the group agreed on at initialisation.
struct FusedAgreedState {
  // The fused path is available on every rank: the library loaded and (SGLang
  // 0.5.23) no workspace of the TP group failed to initialise (voted).
  bool library_available = false;
  // The workspace of the group's tag (kAllReduce), or the workspace a fused
  // norm backend runs on; null when the group is untagged.
  const Workspace* workspace = nullptr;
  // The caller's group and its size.
  GroupId group;
  int group_world_size = 0;
  FusedCapacityRule capacity_rule = FusedCapacityRule::kPerDimension;
  // The fused AR + residual + RMSNorm path (SGLang 0.5.23's
  // flashinfer_ar_fusion_applies): a FlashInfer backend other than cutedsl
  // is configured and attention DP is off; its batch limit.
  bool norm_path = false;
  int64_t norm_max_tokens = 2048;
};

// The reference predicates of the fused backend, SGLang's
// can_use_flashinfer_allreduce(): tagged; library available; 2-D and
// contiguous; workspace initialised; workspace world size and exact peer set
// equal to the group's; then capacity (tokens, hidden, dtype) last, because
// under graph tracing the token dimension is symbolic and every static refusal
// must short-circuit before it. Stops at the first failing predicate.
// Then the capacity check of `state.capacity_rule`.
bool FusedPredicatesHold(const FusedAgreedState& state, const CallDesc& call,
                         DecisionRecord& record);

// The fused AR + residual + RMSNorm on an explicit workspace (SGLang 0.5.23:
// flashinfer_ar_fusion_applies, then flashinfer_allreduce_residual_rmsnorm):
// the norm path is on (a FlashInfer backend, no attention DP); the model's
// norm is fusable; the fused path is available; 0 < tokens <= its batch
// limit; 2-D and contiguous; the workspace initialised; then, where SGLang
// would re-create a workspace bound to other peers (a collective lockstep
// does not model), lockstep refuses it on every rank alike; and the call fits
// the workspace. Stops at the first failing predicate.
bool FusedNormPredicatesHold(const FusedAgreedState& state, const CallDesc& call,
                             DecisionRecord& record);

// Base of every fused-kernel backend: the reference CanUse over agreed state,
// final so that no runtime can weaken it; runtimes implement AllReduce.
class FusedAllReduceBackend : public CommBackend {
 public:
  BackendKind kind() const final { return BackendKind::kFused; }
  bool CanUse(const CallDesc& call, DecisionRecord& record) const final {
    return FusedPredicatesHold(agreed_, call, record);
  }

  const FusedAgreedState& agreed() const { return agreed_; }
  void set_agreed(const FusedAgreedState& state) { agreed_ = state; }

 private:
  FusedAgreedState agreed_;
};

// Agreed state of the custom (peer-to-peer) all-reduce.
struct CustomAgreedState {
  bool available = false;  // created for this group on every rank
  int64_t max_bytes = 0;   // largest message it serves
  int group_world_size = 0;
  bool full_nvlink = false;  // every pair of the group's GPUs linked by NVLink
  bool same_node = false;    // every rank on one node (v2: or one NVLink clique)
  // The generation: 2 is SGLang 0.5.23's default CustomAllReduceV2
  // (device_communicators/custom_all_reduce_v2.py:401-414, 582-597 @ 0.5.23);
  // 1 the vLLM-style CustomAllreduce (custom_all_reduce.py:260-283).
  int generation = 2;
  bool max_inclusive = true;  // bytes <= max_bytes (SGLang); false: bytes < max_bytes
  // v2: the platform's compute capability (major * 10), which picks its tuned
  // table (dispatch/custom_launch.h), and whether captured calls may read
  // registered graph inputs — one node only; across the nodes of one NVLink
  // clique v2 stages every call (custom_all_reduce_v2.py:199-204).
  int sm = 90;
  bool graph_inputs = true;
  // Bit w set: a group of w ranks is served (v1: 2, 4, 6, 8; v2 on SM90: 2-8,
  // on SM100: 2-8 and 16, from its tuned tables).
  uint32_t world_sizes = (1u << 2) | (1u << 4) | (1u << 6) | (1u << 8);
};

// The custom all-reduce's predicates (SGLang's should_custom_ar): available;
// bytes % 16 == 0; contiguous; a served world size; NVLink (v1: or world 2);
// one node (v2: or one NVLink clique); bytes within the size bound (v2: the
// largest size an algorithm of the call's context serves, graph or eager).
// `v2` is the state's v2 configuration (AgreedCustomV2Config(state)), which the
// backend computes once when its state is set; the overload without it
// computes it for this call.
bool CustomPredicatesHold(const CustomAgreedState& state, const CustomV2Config& v2,
                          const CallDesc& call, DecisionRecord& record);
bool CustomPredicatesHold(const CustomAgreedState& state, const CallDesc& call,
                          DecisionRecord& record);

// The v2 configuration of an agreed state: the tuned table of its platform and
// group size, clipped to its bound (CustomV2ConfigFor); empty below v2.
CustomV2Config AgreedCustomV2Config(const CustomAgreedState& state);

// The launch of a v2 call the predicates admitted: its algorithm, grid and
// whether it reads registered graph inputs (dispatch/custom_launch.h).
void ConfigureCustomV2Launch(const CustomAgreedState& state, const CustomV2Config& v2,
                             const CallDesc& call, DecisionRecord& record);

class CustomAllReduceBackend : public CommBackend {
 public:
  BackendKind kind() const final { return BackendKind::kCustom; }
  bool CanUse(const CallDesc& call, DecisionRecord& record) const final {
    return CustomPredicatesHold(agreed_, v2_, call, record);
  }

  const CustomAgreedState& agreed() const { return agreed_; }
  // The agreed state's v2 configuration, computed when the state is set: a
  // function of the state alone that every call's predicates and launch read
  // (it was a third of a decision's time, computed twice per call).
  const CustomV2Config& v2_config() const { return v2_; }
  void set_agreed(const CustomAgreedState& state) {
    agreed_ = state;
    v2_ = AgreedCustomV2Config(state);
  }

 private:
  CustomAgreedState agreed_;
  CustomV2Config v2_;
};

// NCCL: the end of the chain; serves every call.
class NcclBackend : public CommBackend {
 public:
  BackendKind kind() const final { return BackendKind::kNccl; }
  bool CanUse(const CallDesc&, DecisionRecord&) const final { return true; }
};

// The backends of one group on one rank. Non-owning; the runtime owns them.
// `fused` and `custom` may be null (not built for this group); `nccl` may be
// null only for a group of one rank.
struct GroupBackends {
  FusedAllReduceBackend* fused = nullptr;
  CustomAllReduceBackend* custom = nullptr;
  NcclBackend* nccl = nullptr;
  // The fused AR + norm on each workspace, for calls that name one
  // (CallContext::norm_workspace); null where that workspace does not exist.
  FusedAllReduceBackend* norm_on_attn_workspace = nullptr;
  FusedAllReduceBackend* norm_on_moe_workspace = nullptr;
  // The rank's raw local state. The reference policy never reads it.
  const RankLocalState* local = nullptr;
  // The fused kernel's tactic, as the start-up autotuner chose it (null: the
  // built-in table; dispatch/fused_launch.h).
  const FusedTactic* tactic = nullptr;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_BACKEND_H_
