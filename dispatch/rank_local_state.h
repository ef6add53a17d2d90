// Raw, rank-local state: what each rank's own process observed, before any
// cross-rank agreement. It differs between ranks whenever something local went
// differently (an allocation failed, an autotuner picked another size, an
// environment variable was set on one node).
//
// The reference policy never reads it: its predicates read only agreed (voted)
// state and per-call metadata, so a perturbation of these fields changes
// nothing. Known-bad policies (faults/mutants.h) read it, as the bugs they
// reproduce did, and diverge.

#ifndef LOCKSTEP_DISPATCH_RANK_LOCAL_STATE_H_
#define LOCKSTEP_DISPATCH_RANK_LOCAL_STATE_H_

#include <cstdint>

#include "dispatch/dtype.h"

namespace lockstep {

struct RankLocalState {
  // The fused-kernel library imported on this rank.
  bool library_loaded = true;
  // This rank's own workspace allocation / rendezvous succeeded.
  bool workspace_allocated = true;
  // This rank's workspace-manager "initialised" flag (a local reset clears it).
  bool workspace_initialized_view = true;
  // Capacity as this rank's autotuner or allocator sees it; -1: as configured
  // (SGLang #23317, #36943: per-rank buffer sizes).
  int64_t max_tokens_view = -1;
  // The dtype this rank's compile cache last saw; kUnset: none.
  DType dtype_seen = DType::kUnset;
  // This rank's cached contiguity of the activation.
  bool contiguous_view = true;
  // The fused-backend flag as this rank's environment reads it.
  bool fused_backend_flag = true;
  // This rank is tracing (torch.compile) / capturing a CUDA graph.
  bool tracing = false;
  bool graph_capturing = false;
  // SMs of this rank's device (H200: 132); a per-rank grid follows it.
  int sm_count = 132;
  // A numerics override in this rank's environment (fp32 accumulation).
  bool fp32_acc_env = false;
  // How far this rank's local token count differs from what it agreed to
  // pad to (DP attention).
  int64_t token_count_skew = 0;
  // The start-up autotuner: the candidate this rank's own profile timings
  // make fastest (-1: none stands out; TunerProfileNs), and the tactic its
  // tuning cache holds from an earlier run (-1: a cold cache).
  int tuner_favoured = -1;
  int tuner_cache_tactic = -1;
  // How far this rank's own count of a sequence's length is off the
  // scheduler's (a bonus token counted before it is accepted).
  int64_t context_len_skew = 0;
  // How far this rank's clock reads ahead of the others', in µs (an NTP step,
  // a drifting host clock).
  int64_t clock_skew_us = 0;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_RANK_LOCAL_STATE_H_
