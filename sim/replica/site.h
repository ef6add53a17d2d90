// The places in a forward step where a rank all-reduces.

#ifndef LOCKSTEP_SIM_REPLICA_SITE_H_
#define LOCKSTEP_SIM_REPLICA_SITE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lockstep {

enum class SiteKind : uint8_t {
  kEmbedding,        // vocab-parallel embedding output
  kAttnOut,          // attention output projection (RowParallelLinear), maybe fused with the norm
  kDenseMlp,         // dense MLP down projection (RowParallelLinear)
  kMoe,              // post-experts reduction (one stage of the plan)
  kMoeDeferred,      // post-experts reduction fused into the next layer's AR + norm
  kMoeFlush,         // post-experts reduction flushed at a pipeline-stage boundary
  kMoeReplicated,    // a second reduction of the already-replicated MoE output
  kDraftProjection,  // speculative draft model projection
  kDpGather,         // DP-attention gather of the FFN input (and the token counts)
  kDenseDeferred,    // a dense MLP's sum completed at the next layer's input
  kDpReturn,         // attention DP: the FFN output returned to each rank's rows
  kMoeCpGather,      // MoE-CP all-gather of the FFN input over MOE_DP (attn_cp > moe_dp)
};

inline constexpr int kNumSiteKinds = 12;

// How a call runs (workload.cuda_graph_tokens; docs/FAULTS.md, "CUDA graphs"):
// eagerly; recorded into a CUDA graph at start-up, where its decision is
// taken and frozen but nothing runs; or replayed from a graph, which runs the
// frozen decision again without deciding.
enum class CallPhase : uint8_t {
  kEager = 0,
  kCapture = 1,
  kReplay = 2,
};
std::string_view CallPhaseName(CallPhase phase);  // "eager", "capture", "replay"
std::optional<CallPhase> CallPhaseFromName(std::string_view name);

std::string_view SiteKindName(SiteKind kind);
// The kind SiteKindName names `name`; nullopt if none.
std::optional<SiteKind> SiteKindFromName(std::string_view name);

// Where a call happened: step, layer (-1: outside the layers) and site.
struct SiteRef {
  int32_t step = 0;
  int32_t layer = -1;
  SiteKind kind = SiteKind::kAttnOut;
  uint8_t part = 0;  // which reduction of a multi-group plan
  CallPhase phase = CallPhase::kEager;

  friend bool operator==(const SiteRef&, const SiteRef&) = default;

  // "step 0 layer 3 moe" style; "(capture)" or "(replay)" appended for a
  // graph's call. A capture runs before step 0 and is numbered step -1.
  std::string ToString() const;
  // The identity of this site's contributions, the same on every rank.
  uint64_t Instance() const {
    return (static_cast<uint64_t>(step) << 32) | (static_cast<uint64_t>(layer + 1) << 8) |
           static_cast<uint64_t>(kind);
  }
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_SITE_H_
