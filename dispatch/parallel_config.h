// The parallel layout of one serving replica, as SGLang's server arguments
// describe it, and the widths derived from it.

#ifndef LOCKSTEP_DISPATCH_PARALLEL_CONFIG_H_
#define LOCKSTEP_DISPATCH_PARALLEL_CONFIG_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace lockstep {

// Largest world lockstep accepts. The simulator is specified up to 4096 ranks;
// anything beyond this bound is a typo, not a layout.
inline constexpr int kMaxWorldSize = 65536;

// SGLang's parallel arguments (`--tp-size`, `--pp-size`, `--dp-size`,
// `--ep-size`, `--moe-dp-size`, `--attn-cp-size`, `--enable-dp-attention`).
// `world` is the number of ranks launched; 0 means "tp * pp".
struct ParallelConfig {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int ep = 1;
  int moe_dp = 1;
  int attn_cp = 1;
  bool dp_attention = false;
  int world = 0;

  // The number of ranks: `world` when set, else tp * pp.
  int64_t WorldSize() const;

  // "tp4·ep2" style short name, listing only the dimensions that are not 1.
  std::string ShortName() const;

  friend bool operator==(const ParallelConfig&, const ParallelConfig&) = default;
};

// Group widths derived from a valid ParallelConfig, as in SGLang's
// initialize_model_parallel: attn_dp = dp with DP attention (else 1),
// attn_tp = tp / attn_dp / attn_cp, moe_tp = tp / ep / moe_dp.
struct ParallelWidths {
  int world = 1;
  int tp = 1;
  int pp = 1;
  int attn_dp = 1;
  int attn_tp = 1;
  int attn_cp = 1;
  int moe_ep = 1;
  int moe_tp = 1;
  int moe_dp = 1;

  // Expert parallelism and MoE tensor parallelism both wider than one rank:
  // the layout where the post-experts reduction spans two disjoint groups.
  bool IsHybridEpTp() const { return moe_ep > 1 && moe_tp > 1; }
};

// Checks `config` against the rules SGLang's server arguments and group
// builder enforce. The message of an error names the rule and what to change.
absl::Status ValidateParallelConfig(const ParallelConfig& config);

// The widths of a configuration that ValidateParallelConfig accepted.
ParallelWidths DeriveWidths(const ParallelConfig& config);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_PARALLEL_CONFIG_H_
