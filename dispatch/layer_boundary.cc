#include "dispatch/layer_boundary.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lockstep {

GroupRole PostExpertsReductionRole(const ParallelWidths& w) {
  if (w.MergesPostExperts()) return GroupRole::kTp;
  return w.moe_ep > 1 ? GroupRole::kMoeEp : GroupRole::kMoeTp;
}

bool IsTpObject(const ParallelWidths& w, GroupRole role) {
  switch (role) {
    case GroupRole::kTp:
      return true;
    case GroupRole::kAttnTp:
      return w.attn_tp == w.tp;
    case GroupRole::kAttnCp:
      return w.attn_cp == w.tp;
    case GroupRole::kMoeEp:
      return w.moe_ep == w.tp;
    case GroupRole::kMoeTp:
      return w.moe_tp == w.tp;
    case GroupRole::kMoeDp:
      return w.attn_cp > w.moe_dp ? w.attn_cp == w.tp : w.moe_dp == w.tp;
    case GroupRole::kPp:
      return false;
  }
  return false;
}

std::vector<GroupRole> PostExpertsReductions(const ParallelWidths& w) {
  if (w.MergesPostExperts()) return {GroupRole::kTp};
  std::vector<GroupRole> out;
  if (w.moe_ep > 1) out.push_back(GroupRole::kMoeEp);
  if (w.moe_tp > 1) out.push_back(GroupRole::kMoeTp);
  return out;
}

std::string_view DpPaddingName(DpPadding padding) {
  return padding == DpPadding::kMaxLen ? "max_len" : "sum_len";
}

std::vector<int64_t> AlignDpTokens(std::vector<int64_t> tokens, int64_t align) {
  if (align <= 1) return tokens;
  for (int64_t& t : tokens) t = (t + align - 1) / align * align;
  return tokens;
}

DpPadding SelectDpPadding(const DpBatch& b) {
  const int width = static_cast<int>(b.tokens.size());
  if (width <= 1) return DpPadding::kMaxLen;
  if (b.extend) return DpPadding::kSumLen;
  const int64_t max_len = *std::max_element(b.tokens.begin(), b.tokens.end());
  const int64_t min_len = *std::min_element(b.tokens.begin(), b.tokens.end());
  int64_t sum_len = 0;
  for (int64_t t : b.tokens) sum_len += t;
  // _decode_sum_len_fits_custom_all_reduce (dp_attention.py:222-243).
  if (min_len > 0 && !b.speculative && b.custom_v2_max_bytes > 0 &&
      sum_len * b.row_bytes <= b.custom_v2_max_bytes) {
    return DpPadding::kSumLen;
  }
  return sum_len * 2 >= max_len * width ? DpPadding::kMaxLen : DpPadding::kSumLen;
}

int64_t DpGlobalRows(DpPadding padding, const std::vector<int64_t>& tokens) {
  int64_t max_len = 0, sum_len = 0;
  for (int64_t t : tokens) {
    max_len = std::max(max_len, t);
    sum_len += t;
  }
  return padding == DpPadding::kMaxLen ? max_len * static_cast<int64_t>(tokens.size()) : sum_len;
}

int64_t DpRowOffset(DpPadding padding, const std::vector<int64_t>& tokens, int group) {
  if (padding == DpPadding::kMaxLen) {
    const int64_t max_len = *std::max_element(tokens.begin(), tokens.end());
    return max_len * group;
  }
  int64_t offset = 0;
  for (int d = 0; d < group; ++d) offset += tokens[static_cast<size_t>(d)];
  return offset;
}

DpGatherKind PlanDpGather(const ParallelWidths& w, DpPadding padding) {
  if (padding == DpPadding::kSumLen) return DpGatherKind::kAllReduce;
  return w.attn_tp > 1 ? DpGatherKind::kReduceScatterThenGather : DpGatherKind::kAllGather;
}

std::string_view ExitKindName(ExitKind kind) {
  switch (kind) {
    case ExitKind::kNothing:
      return "nothing";
    case ExitKind::kCompleteNow:
      return "complete_now";
    case ExitKind::kDefer:
      return "defer";
    case ExitKind::kReduceScatterV:
      return "reduce_scatterv";
    case ExitKind::kReduceScatter:
      return "reduce_scatter";
    case ExitKind::kAllReduceThenScatter:
      return "all_reduce_then_scatter";
    case ExitKind::kDeferAllReduceScatter:
      return "defer_all_reduce_scatter";
  }
  return "?";
}

std::string ExitPlan::ToString() const {
  std::vector<std::string> names;
  for (GroupRole r : reductions) names.emplace_back(GroupRoleName(r));
  const std::string list = absl::StrJoin(names, " then ");
  const std::string merge = merged ? " (EP and MoE-TP merged)" : "";
  switch (kind) {
    case ExitKind::kNothing:
      return "no reduction (single-rank groups)";
    case ExitKind::kCompleteNow:
      return absl::StrCat("all-reduce over ", list, merge);
    case ExitKind::kDefer:
      return absl::StrFormat(
          "deferred to the next layer's input over %s (fused AR + norm when it applies)",
          GroupRoleName(group));
    case ExitKind::kReduceScatterV:
      return absl::StrFormat("reduce-scatterv over %s", GroupRoleName(group));
    case ExitKind::kReduceScatter:
      return absl::StrFormat("reduce-scatter over %s", GroupRoleName(group));
    case ExitKind::kAllReduceThenScatter:
      return absl::StrCat("all-reduce over ", list, merge, ", then each rank keeps its rows");
    case ExitKind::kDeferAllReduceScatter:
      return absl::StrFormat(
          "deferred to the next layer's input: all-reduce over %s, then each rank keeps its rows",
          GroupRoleName(group));
  }
  return "?";
}

ExitFacts FfnExitFacts(const ParallelWidths& w, const ExitInputs& in) {
  ExitFacts f;
  // _sum_deferral_allowed (exit.py:150-175 @ 0.5.23).
  const bool moe_cp_allgather = w.attn_cp > w.moe_dp;  // dp_attention.py:1317-1323
  const bool unmergeable_hybrid = w.IsHybridEpTp() && !w.MergesPostExperts();
  f.sum_deferral_allowed =
      !moe_cp_allgather && !unmergeable_hybrid && !(w.DpAttention() && in.eagle);
  // exit.py:118-128: an ordinary FFN returns over DP and applies no update at
  // its exit, so attention DP does not forbid it by itself.
  f.may_defer_sum = w.tp > 1 && !in.terminal && f.sum_deferral_allowed;
  // post_experts_sum_is_one_all_reduce (moe/utils.py:912-930): any hybrid
  // refuses, merged or not, and the reduction group must be the TP object.
  // It reads the MoE configuration, so it governs dense FFNs too.
  const bool one_all_reduce = !w.IsHybridEpTp() && IsTpObject(w, PostExpertsReductionRole(w));
  f.single_sum = f.may_defer_sum && one_all_reduce;
  // The FFN output's contract (_resolve_ffn, layer_boundary/factories.py:175-180,
  // 230-233 @ 0.5.23): under attention DP with attention CP, a MoE output may
  // be left to the next layer or reduce-scattered only when it lies on the CP
  // shards (moe_dp == attn_cp, which attention DP refuses at construction);
  // otherwise it is all-reduced and scattered. Decode batches are modelled:
  // a prefill that shards tokens over CP takes factories.py:228-229 instead.
  const bool on_cp_shards = in.ffn == FfnKind::kMoe && w.attn_cp > 1 && w.moe_dp == w.attn_cp;
  const bool may_leave = !w.DpAttention() || w.attn_cp == 1 || on_cp_shards;
  const bool rs = in.boundary == BoundaryReduction::kRs || in.boundary == BoundaryReduction::kRsRsv;
  const bool rsv =
      in.boundary == BoundaryReduction::kRsv || in.boundary == BoundaryReduction::kRsRsv;
  f.may_reduce_scatter = rs && may_leave;
  // should_use_dp_reduce_scatterv (moe/utils.py:730-749): tp == attn_dp == ep;
  // and the output may be reduce-scattered-v (factories.py:257).
  const bool rsv_layout = w.DpAttention() && w.tp == w.attn_dp && w.moe_ep == w.attn_dp;
  f.reduce_scatterv = rsv_layout && rsv && may_leave;
  return f;
}

ExitPlan PlanFfnExit(const ParallelWidths& w, const ExitInputs& in) {
  ExitPlan plan;
  if (w.tp <= 1) return plan;
  const ExitFacts f = FfnExitFacts(w, in);
  plan.merged = in.ffn == FfnKind::kMoe && w.MergesPostExperts();
  // What completing the sum now takes; built only on the paths that do (a
  // deferred sum, the common decode case, allocates nothing).
  auto now = [&] {
    return in.ffn == FfnKind::kMoe ? PostExpertsReductions(w)
                                   : std::vector<GroupRole>{GroupRole::kTp};
  };
  plan.group = GroupRole::kTp;
  if (w.DpAttention()) {
    // _select_dp_reduce_scatter (exit.py:76-95): reduce-scatterv, then a
    // reduce-scatter under MAX_LEN; either completes the sum itself.
    if (f.reduce_scatterv) {
      plan.kind = ExitKind::kReduceScatterV;
      return plan;
    }
    if (f.may_reduce_scatter && in.padding == DpPadding::kMaxLen) {
      plan.kind = ExitKind::kReduceScatter;
      return plan;
    }
    if (f.single_sum && in.tokens > 0) {
      plan.kind = ExitKind::kDeferAllReduceScatter;
      return plan;
    }
    plan.kind = ExitKind::kAllReduceThenScatter;
    plan.reductions = now();
    return plan;
  }
  if (f.single_sum && in.tokens > 0) {
    plan.kind = ExitKind::kDefer;
    return plan;
  }
  plan.reductions = now();
  plan.kind = plan.reductions.empty() ? ExitKind::kNothing : ExitKind::kCompleteNow;
  return plan;
}

}  // namespace lockstep
