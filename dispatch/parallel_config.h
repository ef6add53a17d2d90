// The parallel layout of one serving replica, as SGLang 0.5.23's server
// arguments describe it, and the widths derived from it (docs/FIDELITY.md).
//
//   ParallelConfig c;
//   c.tp = 8;
//   c.ep = 2;
//   c.attn_dp = 2;  // --attn-dp-size 2 (or the deprecated dp = 2, dp_attention)
//   if (absl::Status s = ValidateParallelConfig(c); !s.ok()) ...  // says what to change
//   ParallelWidths w = DeriveWidths(c);  // w.attn_tp == 4, w.moe_tp == 4

#ifndef LOCKSTEP_DISPATCH_PARALLEL_CONFIG_H_
#define LOCKSTEP_DISPATCH_PARALLEL_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace lockstep {

// Largest world lockstep accepts. The simulator is specified up to 4096 ranks;
// anything beyond this bound is a typo, not a layout.
inline constexpr int kMaxWorldSize = 65536;

// SGLang's parallel arguments: `--tp-size`, `--pp-size`, `--dp-size` (data
// parallel replicas), `--attn-dp-size` (attention data parallelism inside the
// TP group), `--ep-size`, `--moe-dp-size`, `--attn-cp-size`, and the
// deprecated `--enable-dp-attention`, which with attn_dp == 1 turns `dp` into
// the attention-DP width (sglang/srt/arg_groups/parallel_hook.py:39-61 @ 0.5.23).
// `world` is the number of ranks of one replica; 0 means "tp * pp".
struct ParallelConfig {
  int tp = 1;
  int pp = 1;
  int dp = 1;  // independent replicas (or attention DP with dp_attention)
  int attn_dp = 1;
  int ep = 1;
  int moe_dp = 1;
  int attn_cp = 1;
  bool dp_attention = false;  // deprecated spelling of attn_dp = dp
  int world = 0;

  // The number of ranks of one replica: `world` when set, else tp * pp.
  int64_t WorldSize() const;

  // The configuration after SGLang resolves the deprecated spelling:
  // dp_attention with attn_dp == 1 becomes attn_dp = dp, dp = 1.
  ParallelConfig Resolved() const;

  // "tp4-ep2" style short name, listing only the dimensions that are not 1.
  std::string ShortName() const;

  friend bool operator==(const ParallelConfig&, const ParallelConfig&) = default;
};

// Group widths derived from a valid ParallelConfig, as in SGLang's
// runtime_context: attn_tp = tp / attn_dp / attn_cp, moe_tp = tp / ep / moe_dp.
struct ParallelWidths {
  int world = 1;  // ranks of one replica: tp * pp
  int tp = 1;
  int pp = 1;
  int replicas = 1;  // --dp-size without attention DP: independent worlds
  int attn_dp = 1;
  int attn_tp = 1;
  int attn_cp = 1;
  int moe_ep = 1;
  int moe_tp = 1;
  int moe_dp = 1;

  // Expert parallelism and MoE tensor parallelism both wider than one rank:
  // the layout where the post-experts reduction spans two disjoint groups.
  bool IsHybridEpTp() const { return moe_ep > 1 && moe_tp > 1; }
  // Hybrid EP+TP whose two reductions SGLang merges into one TP all-reduce
  // (sglang/srt/layers/moe/utils.py:900-909 @ 0.5.23: moe_dp == 1).
  bool MergesPostExperts() const { return IsHybridEpTp() && moe_dp == 1; }
  bool DpAttention() const { return attn_dp > 1; }
};

// Checks `config` against the rules SGLang 0.5.23 enforces on its server
// arguments (sglang/srt/arg_groups/parallel_hook.py) and when the scheduler
// publishes the layout (sglang/srt/runtime_context.py:266-350). The message
// of an error names the rule, where SGLang enforces it, and what to change.
absl::Status ValidateParallelConfig(const ParallelConfig& config);

// Layouts SGLang 0.5.23 accepts on the command line but refuses when it
// builds a MoE model on the TP group (no all-to-all backend):
// moe_dp == attn_cp > 1 under attention DP
// (sglang/srt/layers/layer_boundary/factories.py:66-89 @ 0.5.23).
absl::Status ValidateMoeModelConstruction(const ParallelConfig& config);

// The attention's heads split evenly over attention TP: every SGLang
// attention asserts it when it builds its weights (DeepSeek's MLA at
// models/deepseek_v2.py:2057 @ 0.5.23: num_heads % attn_tp_size == 0).
// `heads` <= 0 means the model does not say, and nothing is checked.
absl::Status ValidateAttentionHeads(const ParallelConfig& config, int heads);

// The widths of a configuration that ValidateParallelConfig accepted.
ParallelWidths DeriveWidths(const ParallelConfig& config);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_PARALLEL_CONFIG_H_
