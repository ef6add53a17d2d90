// How SGLang 0.5.23 completes the partial sums a layer leaves behind
// (sglang/srt/layers/layer_boundary/, docs/FIDELITY.md): the attention output
// owed over ATTN_TP, the FFN output owed over its reduction group, when a sum
// is deferred into the next layer's input (where the fused AR + residual +
// RMSNorm may absorb it), and the collectives attention DP uses to gather
// rows before the FFN and return them after it. Pure functions of what every
// rank shares: the layout, the model and the batch's token counts.
//
//   ExitInputs in;
//   in.ffn = FfnKind::kMoe;
//   in.tokens = 64;
//   ExitPlan plan = PlanFfnExit(widths, in);
//   // tp4·ep2: plan.kind == ExitKind::kCompleteNow, plan.reductions == {kTp}
//   // (the merged post-experts sum; hybrid EP+TP never defers)

#ifndef LOCKSTEP_DISPATCH_LAYER_BOUNDARY_H_
#define LOCKSTEP_DISPATCH_LAYER_BOUNDARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/group_layout.h"
#include "dispatch/parallel_config.h"
#include "dispatch/serving_args.h"

namespace lockstep {

// The group over which the MoE output's sum runs (post_experts_reduction_group,
// layers/moe/utils.py:900-909 @ 0.5.23): TP when EP and MoE-TP merge, else
// MOE_EP when ep > 1, else MOE_TP. The MoE fusion workspace rendezvouses on it.
GroupRole PostExpertsReductionRole(const ParallelWidths& widths);

// Whether `role`'s group object is the TP object itself (SGLang compares
// objects, not ranks).
bool IsTpObject(const ParallelWidths& widths, GroupRole role);

// The all-reduces that complete the MoE output now (_post_experts_sum,
// layers/moe/utils.py:868-897): one TP all-reduce when merged, else MOE_EP
// (if ep > 1) then MOE_TP (if moe_tp > 1).
std::vector<GroupRole> PostExpertsReductions(const ParallelWidths& widths);

enum class FfnKind : uint8_t { kMoe, kDense };

// How attention-DP ranks pad the gathered MoE input (DpPaddingMode,
// layers/dp_attention.py:165-206 @ 0.5.23).
enum class DpPadding : uint8_t { kMaxLen, kSumLen };
std::string_view DpPaddingName(DpPadding padding);  // "max_len", "sum_len"

// One step's attention-DP batch, as every rank of the TP group all-gathered it.
struct DpBatch {
  std::vector<int64_t> tokens;  // per attention-DP group
  bool extend = false;          // a prefill (extend) batch
  bool speculative = false;
  // SUM_LEN's one TP all-reduce fits the TP group's CustomAllReduceV2 (0: no
  // v2 custom all-reduce on TP).
  int64_t custom_v2_max_bytes = 0;
  int64_t row_bytes = 0;  // hidden * element size
};
// Each group's count rounded up to a multiple of `align` (attention TP), so
// that a group's slot reduce-scatters evenly over attention TP; SGLang aligns
// before it picks the padding (model_executor/forward_batch_info.py:1769-1772 @ 0.5.23).
std::vector<int64_t> AlignDpTokens(std::vector<int64_t> tokens, int64_t align);
DpPadding SelectDpPadding(const DpBatch& batch);
// Rows of the gathered buffer: max * groups (MAX_LEN) or the sum (SUM_LEN).
int64_t DpGlobalRows(DpPadding padding, const std::vector<int64_t>& tokens);
// First row of attention-DP group `group` in the gathered buffer.
int64_t DpRowOffset(DpPadding padding, const std::vector<int64_t>& tokens, int group);

// How the gathered FFN input is built under attention DP, completing the
// attention output's ATTN_TP sum on the way (dp_gather_partial,
// layers/dp_attention.py:661-765, boundary.py:675-709 @ 0.5.23).
enum class DpGatherKind : uint8_t {
  kAllReduce,                // SUM_LEN: each rank writes its rows, one TP all-reduce
  kAllGather,                // MAX_LEN, attn_tp == 1: one TP all-gather
  kReduceScatterThenGather,  // MAX_LEN, attn_tp > 1: ATTN_TP reduce-scatter, TP all-gather
};
DpGatherKind PlanDpGather(const ParallelWidths& widths, DpPadding padding);

// What one FFN (or the attention) at a layer's exit needs to know.
struct ExitInputs {
  FfnKind ffn = FfnKind::kMoe;
  // The last layer of the last pipeline stage: the final norm accepts no
  // pending sum (residual/__init__.py:248-250), so it completes at the exit.
  bool terminal = false;
  // This rank's batch tokens (attention DP: the gathered buffer's rows).
  int64_t tokens = 0;
  bool eagle = false;                                      // EAGLE speculative decoding
  BoundaryReduction boundary = BoundaryReduction::kRsRsv;  // resolved
  DpPadding padding = DpPadding::kMaxLen;                  // attention DP only
  // Read by PR #30700's gate (dispatch/fusion_gate.h), not by SGLang 0.5.23's
  // exit, which defers regardless and lets the consumer decide the fusion:
  bool last_in_stage = false;      // the last layer of any pipeline stage
  bool fused_backend = false;      // a fused AR + norm backend is configured
  bool norm_fusable = true;        // the model can fuse AR with the next norm
  int64_t norm_max_tokens = 2048;  // the fused AR + norm's batch limit
};

enum class ExitKind : uint8_t {
  kNothing,      // nothing owed (tp == 1)
  kCompleteNow,  // `reductions` run now, in order
  kDefer,        // owed to the next layer's input, over `group` (the TP object)
  // Attention DP: each rank keeps its own rows of the gathered buffer.
  kReduceScatterV,         // now: a TP reduce-scatterv (rows per group)
  kReduceScatter,          // now: a TP reduce-scatter (MAX_LEN), then an ATTN_TP all-gather
  kAllReduceThenScatter,   // now: `reductions`, then each rank keeps its rows
  kDeferAllReduceScatter,  // at the next input: a TP all-reduce, then keep the rows (never fused)
};
std::string_view ExitKindName(ExitKind kind);

struct ExitPlan {
  ExitKind kind = ExitKind::kNothing;
  std::vector<GroupRole> reductions;  // kCompleteNow, kAllReduceThenScatter
  GroupRole group = GroupRole::kTp;   // kDefer / kDeferAllReduceScatter / reduce-scatters
  bool merged = false;                // EP and MoE-TP merged into one TP reduction
  std::string ToString() const;
};

// The facts of exit.py:98-175 @ 0.5.23 that the plan rests on, for reports
// and the conformance suite.
struct ExitFacts {
  bool sum_deferral_allowed = false;
  bool may_defer_sum = false;
  bool single_sum = false;  // the post-experts sum is one all-reduce over the TP object
  bool reduce_scatterv = false;
  // The output may be reduce-scattered back to the ranks' rows under
  // attention DP (OutputContract.may_reduce_scatter, factories.py:256).
  bool may_reduce_scatter = false;
};
ExitFacts FfnExitFacts(const ParallelWidths& widths, const ExitInputs& in);

// ExitPolicy._decide (layer_boundary/exit.py:267-353 @ 0.5.23) for an
// ordinary FFN (no all-to-all, LoRA or TP1 shared expert).
ExitPlan PlanFfnExit(const ParallelWidths& widths, const ExitInputs& in);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_LAYER_BOUNDARY_H_
