// A scenario: the hardware, parallel layout, model, dispatch options,
// workload, faults and expected verdict of one simulated (or hardware) run.
// Parsed from YAML by scenario_yaml.h; plain data here.

#ifndef LOCKSTEP_SIM_SCENARIO_SCENARIO_H_
#define LOCKSTEP_SIM_SCENARIO_SCENARIO_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dispatch/dtype.h"
#include "dispatch/group_layout.h"
#include "dispatch/parallel_config.h"
#include "dispatch/serving_args.h"
#include "sim/scenario/verdict.h"

namespace lockstep {

// Latency and bandwidth of one class of GPU-to-GPU hop.
struct HopSpec {
  double latency_us = 1.0;
  double bandwidth_gbps = 100.0;  // GB/s, one direction
};

// The machine: how GPUs are grouped into nodes (NVLink/NVSwitch islands) and
// nodes into NVLink domains (one MNNVL fabric, e.g. a GB200 NVL72 rack).
struct HardwareSpec {
  std::string name;
  std::string description;
  int gpus_per_node = 8;
  int nodes_per_domain = 1;  // > 1: multi-node NVLink (MNNVL)
  int max_gpus = 8;          // GPUs in the system described; the world must fit
  bool nvlink = true;        // GPUs of a node are all NVLink-connected
  int sm = 90;               // compute capability x10 (90: H100/H200, 100: B200/GB200)
  double tflops = 990.0;     // dense bf16 per GPU, for compute time
  HopSpec intra_node;        // NVLink (or PCIe when nvlink is false)
  HopSpec intra_domain;      // MNNVL between nodes of a domain
  HopSpec network;           // between domains
};

// The model shapes a scenario accepts (the scenario parser's ranges; the
// importer refuses a config.json outside them, naming its key).
inline constexpr int64_t kMaxModelHidden = int64_t{1} << 20;
inline constexpr int kMaxModelLayers = 10000;
inline constexpr int kMaxAttentionHeads = 1 << 20;

// What the dispatch depends on in a model.
struct ModelSpec {
  std::string name;
  int64_t hidden = 4096;
  int layers = 2;
  bool moe = false;
  // Attention heads (num_attention_heads); they split over attention TP.
  // 0: not given, not checked.
  int attention_heads = 0;
  int first_moe_layer = 0;            // layers before it are dense
  bool ar_norm_fusion = true;         // AR + residual + RMSNorm can be fused (not DeepSeek-V4: mHC)
  double layer_gflops_per_token = 0;  // 0: 24 * hidden^2 / 1e9
  // The Hugging Face architecture (config.json "architectures"[0]): which
  // SGLang defaults apply (the fusion auto-enable list, the boundary
  // reduction).
  std::string architecture;
  // Under attention DP the embedding reduces over ATTN_TP (DeepSeek,
  // Qwen-MoE pass it: vocab_parallel_embedding.py:166-185 @ 0.5.23), else TP.
  bool embedding_attn_tp_under_dp = false;
  // The group the speculative draft head's row-parallel projection reduces
  // over: none (replicated, as DeepSeek NextN's eh_proj), attn_tp or tp.
  std::optional<GroupRole> draft_projection;
};

// The serving engine's all-reduce configuration (SGLang's launch flags).
struct DispatchSpec {
  // --flashinfer-allreduce-fusion-backend (true: auto, false: none; unset:
  // SGLang's auto-enable decides).
  FusionBackendFlag fused_backend = FusionBackendFlag::kUnset;
  int64_t max_tokens = 2048;        // fusion workspace capacity (tokens)
  DType dtype = DType::kBf16;       // activation dtype (and workspace dtype)
  bool custom_allreduce = true;     // not --disable-custom-all-reduce
  bool custom_allreduce_v2 = true;  // SGLANG_OPT_USE_CUSTOM_ALL_REDUCE_V2
  int64_t custom_max_bytes = 0;     // its size bound; 0: the generation's default
  BoundaryReduction boundary_reduction = BoundaryReduction::kAuto;  // --boundary-reduction
  std::string policy = "reference";
  int policy_line = 0;                   // where `policy` was given (0: not given)
  int64_t max_fused_norm_tokens = 2048;  // batch limit of the fused AR + norm
};

// provenance: symbolic fingerprints only; numeric: every element's bits as
// well; sampled: the bits of a fixed sample of elements (NumericSampler),
// for a cost near provenance mode's (docs/SIMULATOR.md, "Data").
enum class DataMode : uint8_t { kProvenance, kNumeric, kSampled };

struct WorkloadSpec {
  int steps = 1;
  // Tokens per step per attention-DP group, cycled over steps.
  std::vector<int64_t> tokens = {1};
  // Per attention-DP group token counts ([group][step], cycled); empty: all
  // groups use `tokens`.
  std::vector<std::vector<int64_t>> dp_tokens;
  int layers = 0;  // 0: the model's layer count
  bool embedding = true;
  bool speculative = false;  // EAGLE draft projection after the last layer
  bool extend = false;       // prefill (extend) batches; else decode
  DataMode data = DataMode::kProvenance;
  // Sampled data: 8 consecutive elements kept in every `sample_stride` (a
  // power of two, 8 to 2^20); 0: the largest power of two not above
  // hidden, within [8, 8192] (SamplerFor).
  int64_t sample_stride = 0;
  bool ftz = false;  // kernels run with flush-to-zero
  // The fused kernel's tactic is tuned at start-up over each TP group (a
  // handshake, then one profile run per candidate; docs/FAULTS.md).
  bool autotune = false;
  // Speculative decoding's draft step is skipped once a sequence's context
  // (prompt_len at step 0, one token more each step) plus draft_tokens would
  // pass max_model_len (0: no limit). Every rank must skip together
  // (docs/FAULTS.md, "The speculative skip").
  int64_t max_model_len = 0;
  int64_t prompt_len = 0;
  int64_t draft_tokens = 1;
  // A request of each batch times out once the scheduler's clock passes
  // this many µs of the run (0: none): from that step on, every attention-DP
  // group's batch carries one token fewer (docs/FAULTS.md, "Time-based
  // decisions").
  int64_t abort_after_us = 0;
  // Decode batch sizes (tokens per attention-DP group) captured as CUDA
  // graphs at start-up, ascending; empty: every step runs eagerly. A step
  // whose agreed batch fits a captured size replays that graph, padded to it
  // (docs/FAULTS.md, "CUDA graphs").
  std::vector<int64_t> cuda_graph_tokens;
};

// One injected fault (kinds and parameters: faults/, docs/FAULTS.md).
struct FaultSpec {
  std::string kind;
  std::vector<int> ranks;
  int64_t at_call = -1;  // the rank's n-th all-reduce call (0-based), -1: any
  int64_t at_step = -1;
  int64_t at_layer = -1;  // the n-th layer of the model (0-based), -1: any
  std::string at_site;    // a call-site kind (SiteKindName: "moe"), "": any
  std::string at_phase;   // "eager", "capture" or "replay" (CallPhaseName), "": any
  std::map<std::string, std::string> params;
  int line = 0;  // where it was declared
};

// How stores into a peer's memory become visible there (docs/SIMULATOR.md,
// "Relaxed memory").
enum class MemoryModel : uint8_t {
  kImmediate,  // a store is visible to its peer at once (the default)
  kRelaxed,    // a store reaches its peer after a delay the run's seed draws, in
               // an order only the protocol's releases and kernel ends constrain
};

struct TimeoutSpec {
  double kernel_wait_ms = 10000;  // bounded waits of the fused kernel
  double watchdog_ms = 60000;     // NCCL watchdog
};

struct Scenario {
  int version = 1;
  std::string name;
  std::string description;
  std::string path;    // file it came from ("" when built in code)
  std::string source;  // the YAML text it was parsed from
  HardwareSpec hardware;
  ParallelConfig parallel;
  ModelSpec model;
  DispatchSpec dispatch;
  WorkloadSpec workload;
  std::vector<FaultSpec> faults;
  TimeoutSpec timeouts;
  MemoryModel memory = MemoryModel::kImmediate;
  std::optional<Verdict> expect;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SCENARIO_SCENARIO_H_
