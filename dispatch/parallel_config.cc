#include "dispatch/parallel_config.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lockstep {

int64_t ParallelConfig::WorldSize() const {
  return world != 0 ? world : static_cast<int64_t>(tp) * pp;
}

std::string ParallelConfig::ShortName() const {
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat("tp", tp));
  if (ep > 1) parts.push_back(absl::StrCat("ep", ep));
  if (moe_dp > 1) parts.push_back(absl::StrCat("moedp", moe_dp));
  if (dp_attention) parts.push_back(absl::StrCat("dpattn", dp));
  if (attn_cp > 1) parts.push_back(absl::StrCat("cp", attn_cp));
  if (pp > 1) parts.push_back(absl::StrCat("pp", pp));
  return absl::StrJoin(parts, "-");
}

namespace {

absl::Status CheckSize(std::string_view name, int value) {
  if (value < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be a positive integer, got %d", name, value));
  }
  if (value > kMaxWorldSize) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s=%d is larger than the %d ranks lockstep accepts", name, value, kMaxWorldSize));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateParallelConfig(const ParallelConfig& c) {
  for (auto [name, value] : {std::pair<std::string_view, int>{"tp", c.tp},
                             {"pp", c.pp},
                             {"dp", c.dp},
                             {"ep", c.ep},
                             {"moe_dp", c.moe_dp},
                             {"attn_cp", c.attn_cp}}) {
    if (absl::Status s = CheckSize(name, value); !s.ok()) return s;
  }
  if (c.world < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("world must be positive (or 0 for tp*pp), got %d", c.world));
  }
  const int64_t tp_pp = static_cast<int64_t>(c.tp) * c.pp;
  if (tp_pp > kMaxWorldSize) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tp*pp = %d*%d = %d ranks is more than the %d lockstep accepts", c.tp, c.pp,
                        tp_pp, kMaxWorldSize));
  }
  if (c.world != 0 && c.world != tp_pp) {
    return absl::InvalidArgumentError(
        absl::StrFormat("world=%d but tp*pp = %d*%d = %d: a rank is pp_rank*tp + tp_rank, so "
                        "launch exactly tp*pp ranks (or change tp/pp)",
                        c.world, c.tp, c.pp, tp_pp));
  }
  if (c.dp > 1 && !c.dp_attention) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dp=%d without dp_attention: plain data parallelism launches separate replicas, each its "
        "own world; describe one replica (dp=1), or set dp_attention to place attention DP inside "
        "the TP group",
        c.dp));
  }
  if (c.dp_attention && c.tp % c.dp != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tp=%d is not divisible by dp=%d: DP attention splits each TP group into dp attention "
        "groups of tp/dp ranks",
        c.tp, c.dp));
  }
  const int attn_dp = c.dp_attention ? c.dp : 1;
  // In 64 bits: dp and attn_cp may each be 65 536, and their product wrapped
  // to 0 in an int made `tp % 0` a floating-point exception (issue 11).
  const int64_t attn_split = static_cast<int64_t>(attn_dp) * c.attn_cp;
  if (attn_split > c.tp || c.tp % attn_split != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tp=%d is not divisible by attn_dp*attn_cp = %d*%d = %d: attention TP width must be whole",
        c.tp, attn_dp, c.attn_cp, attn_split));
  }
  const int64_t moe_parallel = static_cast<int64_t>(c.ep) * c.moe_dp;
  if (moe_parallel > c.tp || c.tp % moe_parallel != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tp=%d is not divisible by ep*moe_dp = %d*%d = %d: the MoE-TP width tp/(ep*moe_dp) must "
        "be a whole number of ranks",
        c.tp, c.ep, c.moe_dp, moe_parallel));
  }
  if (c.moe_dp > 1) {
    if (c.ep > 1 && moe_parallel != c.tp) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "with moe_dp=%d and ep=%d, ep*moe_dp must equal tp=%d (SGLang server_args)", c.moe_dp,
          c.ep, c.tp));
    }
    if (c.pp != 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("moe_dp=%d requires pp=1 (got pp=%d)", c.moe_dp, c.pp));
    }
    if (c.attn_cp != c.moe_dp) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "attn_cp=%d differs from moe_dp=%d: SGLang allows attn_cp != moe_dp only when moe_dp=1",
          c.attn_cp, c.moe_dp));
    }
  }
  return absl::OkStatus();
}

ParallelWidths DeriveWidths(const ParallelConfig& c) {
  ParallelWidths w;
  w.world = static_cast<int>(c.WorldSize());
  w.tp = c.tp;
  w.pp = c.pp;
  w.attn_dp = c.dp_attention ? c.dp : 1;
  w.attn_cp = c.attn_cp;
  w.attn_tp = c.tp / w.attn_dp / w.attn_cp;
  w.moe_ep = c.ep;
  w.moe_dp = c.moe_dp;
  w.moe_tp = c.tp / c.ep / c.moe_dp;
  return w;
}

}  // namespace lockstep
