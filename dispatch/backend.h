// The backend seam: the only way the dispatch core talks to communication.
// The simulator (sim/) and the GPU runtime (kernels/cuda/, the hw runner) each
// implement it; the dispatch core never knows which one it runs on.

#ifndef LOCKSTEP_DISPATCH_BACKEND_H_
#define LOCKSTEP_DISPATCH_BACKEND_H_

#include <cstdint>

#include "absl/status/status.h"
#include "dispatch/decision.h"
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

// State of the fused kernel backend (FlashInfer/TRT-LLM kAllReduce on a fusion
// workspace) that every rank of the group agreed on at initialisation.
struct FusedAgreedState {
  // The kernel library loaded on every rank of the group (voted).
  bool library_available = false;
  // The workspace of the group's tag; null when the group is untagged.
  const Workspace* workspace = nullptr;
  // The caller's group and its size.
  GroupId group;
  int group_world_size = 0;
};

// The reference predicates of the fused backend, SGLang's
// can_use_flashinfer_allreduce(): tagged; library available; 2-D and
// contiguous; workspace initialised; workspace world size and exact peer set
// equal to the group's; then capacity (tokens, hidden, dtype) last, because
// under graph tracing the token dimension is symbolic and every static refusal
// must short-circuit before it. Stops at the first failing predicate.
bool FusedPredicatesHold(const FusedAgreedState& state, const CallDesc& call,
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

// Agreed state of the custom (one-node, peer-to-peer) all-reduce.
struct CustomAgreedState {
  bool available = false;  // created for this group on every rank
  int64_t max_bytes = 0;   // largest message it serves (exclusive)
  int group_world_size = 0;
  bool full_nvlink = false;  // every pair of the group's GPUs linked by NVLink
  bool same_node = false;    // every rank of the group on one node
};

// The custom all-reduce's reference predicates (vLLM / SGLang
// should_custom_ar): available; bytes % 16 == 0; contiguous; world size in
// {2, 4, 6, 8}; world 2 or full NVLink; same node; bytes < max size.
bool CustomPredicatesHold(const CustomAgreedState& state, const CallDesc& call,
                          DecisionRecord& record);

class CustomAllReduceBackend : public CommBackend {
 public:
  BackendKind kind() const final { return BackendKind::kCustom; }
  bool CanUse(const CallDesc& call, DecisionRecord& record) const final {
    return CustomPredicatesHold(agreed_, call, record);
  }

  const CustomAgreedState& agreed() const { return agreed_; }
  void set_agreed(const CustomAgreedState& state) { agreed_ = state; }

 private:
  CustomAgreedState agreed_;
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
  // The rank's raw local state. The reference policy never reads it.
  const RankLocalState* local = nullptr;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_BACKEND_H_
