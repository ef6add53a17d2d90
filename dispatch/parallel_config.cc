#include "dispatch/parallel_config.h"

#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lockstep {

int64_t ParallelConfig::WorldSize() const {
  return world != 0 ? world : static_cast<int64_t>(tp) * pp;
}

ParallelConfig ParallelConfig::Resolved() const {
  ParallelConfig c = *this;
  if (c.dp_attention && c.attn_dp == 1) {
    c.attn_dp = c.dp;
    c.dp = 1;
  }
  c.dp_attention = false;
  return c;
}

std::string ParallelConfig::ShortName() const {
  const ParallelConfig c = Resolved();
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat("tp", c.tp));
  if (c.ep > 1) parts.push_back(absl::StrCat("ep", c.ep));
  if (c.moe_dp > 1) parts.push_back(absl::StrCat("moedp", c.moe_dp));
  if (c.attn_dp > 1) parts.push_back(absl::StrCat("dpattn", c.attn_dp));
  if (c.attn_cp > 1) parts.push_back(absl::StrCat("cp", c.attn_cp));
  if (c.pp > 1) parts.push_back(absl::StrCat("pp", c.pp));
  if (c.dp > 1) parts.push_back(absl::StrCat("dp", c.dp));
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

// "<what>; SGLang 0.5.23 refuses it <where>. <what to change>".
absl::Status Refused(std::string what, std::string_view where, std::string change) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s; SGLang 0.5.23 refuses it %s. %s", what, where, change));
}

}  // namespace

absl::Status ValidateParallelConfig(const ParallelConfig& raw) {
  for (auto [name, value] : {std::pair<std::string_view, int>{"tp", raw.tp},
                             {"pp", raw.pp},
                             {"dp", raw.dp},
                             {"attn_dp", raw.attn_dp},
                             {"ep", raw.ep},
                             {"moe_dp", raw.moe_dp},
                             {"attn_cp", raw.attn_cp}}) {
    if (absl::Status s = CheckSize(name, value); !s.ok()) return s;
  }
  if (raw.world < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("world must be positive (or 0 for tp*pp), got %d", raw.world));
  }
  const int64_t tp_pp = static_cast<int64_t>(raw.tp) * raw.pp;
  if (tp_pp > kMaxWorldSize) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tp*pp = %d*%d = %d ranks is more than the %d lockstep accepts", raw.tp,
                        raw.pp, tp_pp, kMaxWorldSize));
  }
  if (raw.world != 0 && raw.world != tp_pp) {
    return absl::InvalidArgumentError(
        absl::StrFormat("world=%d but tp*pp = %d*%d = %d: a rank is pp_rank*tp + tp_rank, so "
                        "launch exactly tp*pp ranks (or change tp/pp)",
                        raw.world, raw.tp, raw.pp, tp_pp));
  }
  const ParallelConfig c = raw.Resolved();
  if (c.attn_dp > 1 && c.dp > 1) {
    return Refused(absl::StrFormat("dp=%d replicas with attn_dp=%d", c.dp, c.attn_dp),
                   "in its server arguments (arg_groups/parallel_hook.py:287-292)",
                   "Use either data-parallel replicas (dp) or attention DP (attn_dp), not both.");
  }
  if (c.attn_dp > 1 && c.tp % c.attn_dp != 0) {
    return Refused(absl::StrFormat("tp=%d is not divisible by attn_dp=%d", c.tp, c.attn_dp),
                   "in its server arguments (arg_groups/parallel_hook.py:326)",
                   "Attention DP splits each TP group into attn_dp groups of tp/attn_dp ranks: "
                   "pick an attn_dp that divides tp.");
  }
  if (c.attn_cp > 1 && c.tp % c.attn_cp != 0) {
    return Refused(absl::StrFormat("tp=%d is not divisible by attn_cp=%d", c.tp, c.attn_cp),
                   "in its server arguments (arg_groups/parallel_hook.py:157-161)",
                   "Pick an attn_cp that divides tp.");
  }
  // In 64 bits: attn_dp and attn_cp may each be 65 536, and their product in
  // an int wrapped to 0, making `tp % 0` a floating-point exception.
  const int64_t attn_split = static_cast<int64_t>(c.attn_dp) * c.attn_cp;
  if (c.attn_cp > 1 && c.tp % attn_split != 0) {
    return Refused(absl::StrFormat("tp=%d is not divisible by attn_dp*attn_cp = %d*%d = %d", c.tp,
                                   c.attn_dp, c.attn_cp, attn_split),
                   "in its server arguments (arg_groups/parallel_hook.py:162-164)",
                   "The attention TP width tp/(attn_dp*attn_cp) must be whole.");
  }
  if (c.moe_dp > 1) {
    if (c.tp % c.moe_dp != 0) {
      return Refused(absl::StrFormat("tp=%d is not divisible by moe_dp=%d", c.tp, c.moe_dp),
                     "in its server arguments (arg_groups/parallel_hook.py:170-174)",
                     "Pick a moe_dp that divides tp.");
    }
    if (static_cast<int64_t>(c.ep) * c.moe_dp > c.tp) {
      return Refused(absl::StrFormat("ep*moe_dp = %d*%d = %d is larger than tp=%d", c.ep, c.moe_dp,
                                     static_cast<int64_t>(c.ep) * c.moe_dp, c.tp),
                     "in its server arguments (arg_groups/parallel_hook.py:175-177)",
                     "Lower ep or moe_dp so that ep*moe_dp <= tp.");
    }
    if (c.pp != 1) {
      return Refused(absl::StrFormat("moe_dp=%d with pp=%d", c.moe_dp, c.pp),
                     "in its server arguments (arg_groups/parallel_hook.py:178)",
                     "MoE data parallelism needs pp=1.");
    }
    if (c.ep > 1 && static_cast<int64_t>(c.ep) * c.moe_dp != c.tp) {
      return Refused(
          absl::StrFormat("ep*moe_dp = %d*%d = %d is not tp=%d", c.ep, c.moe_dp,
                          static_cast<int64_t>(c.ep) * c.moe_dp, c.tp),
          "in its server arguments (arg_groups/parallel_hook.py:180-183)",
          "With moe_dp > 1 and ep > 1, ep*moe_dp must equal tp (no MoE-TP inside a MoE-DP group).");
    }
  }
  if (c.attn_cp != c.moe_dp && c.moe_dp != 1) {
    return Refused(absl::StrFormat("attn_cp=%d differs from moe_dp=%d", c.attn_cp, c.moe_dp),
                   "in its server arguments (arg_groups/parallel_hook.py:189-192)",
                   "attn_cp != moe_dp is supported only with moe_dp=1: set attn_cp = moe_dp.");
  }
  if (c.tp % attn_split != 0) {
    return Refused(absl::StrFormat("tp=%d is not attn_tp*attn_dp*attn_cp", c.tp),
                   "when the scheduler publishes the layout (runtime_context.py:297-302)",
                   "Pick attn_dp and attn_cp whose product divides tp.");
  }
  const int64_t moe_parallel = static_cast<int64_t>(c.ep) * c.moe_dp;
  if (moe_parallel > c.tp || c.tp % moe_parallel != 0) {
    return Refused(
        absl::StrFormat("tp=%d is not ep*moe_dp*moe_tp for ep=%d, moe_dp=%d (tp must be a "
                        "multiple of ep*moe_dp = %d)",
                        c.tp, c.ep, c.moe_dp, moe_parallel),
        "only when the scheduler publishes the layout (runtime_context.py:306-311), after "
        "its server arguments were accepted",
        "Pick an ep that divides tp/moe_dp.");
  }
  return absl::OkStatus();
}

absl::Status ValidateMoeModelConstruction(const ParallelConfig& raw) {
  const ParallelConfig c = raw.Resolved();
  if (c.attn_cp > 1 && c.moe_dp == c.attn_cp && c.attn_dp > 1) {
    return Refused(
        absl::StrFormat("a MoE on the TP group with moe_dp == attn_cp = %d under attention DP "
                        "(attn_dp=%d)",
                        c.attn_cp, c.attn_dp),
        "when it builds the model (layers/layer_boundary/factories.py:66-89, "
        "NotImplementedError)",
        "Drop attention DP, or use moe_dp=1.");
  }
  return absl::OkStatus();
}

absl::Status ValidateAttentionHeads(const ParallelConfig& config, int heads) {
  if (heads <= 0) return absl::OkStatus();
  const ParallelWidths w = DeriveWidths(config);
  if (heads % w.attn_tp != 0) {
    return Refused(absl::StrFormat("%d attention heads do not split over attn_tp=%d "
                                   "(tp=%d / attn_dp=%d / attn_cp=%d)",
                                   heads, w.attn_tp, w.tp, w.attn_dp, w.attn_cp),
                   "when it builds the attention (models/deepseek_v2.py:2057, "
                   "num_heads % attn_tp_size == 0)",
                   "Choose tp, attn_dp and attn_cp so that tp / attn_dp / attn_cp divides the "
                   "head count.");
  }
  return absl::OkStatus();
}

ParallelWidths DeriveWidths(const ParallelConfig& raw) {
  const ParallelConfig c = raw.Resolved();
  ParallelWidths w;
  w.world = static_cast<int>(c.WorldSize());
  w.tp = c.tp;
  w.pp = c.pp;
  w.replicas = c.dp;
  w.attn_dp = c.attn_dp;
  w.attn_cp = c.attn_cp;
  w.attn_tp = c.tp / w.attn_dp / w.attn_cp;
  w.moe_ep = c.ep;
  w.moe_dp = c.moe_dp;
  w.moe_tp = c.tp / c.ep / c.moe_dp;
  return w;
}

}  // namespace lockstep
