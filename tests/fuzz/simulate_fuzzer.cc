// libFuzzer target: parse a scenario, shrink it to a few ranks, steps, layers
// and tokens, and simulate it — with its declared faults, then with a swarm
// draw. The simulator must never crash or hang (it always terminates: a
// deadlock is detected, not waited out), and under the reference design no
// run of a model wired for its layout may end in a silent failure. A run whose memory estimate
// (sim/run_estimate.h) is over kMaxEstimateBytes is skipped, as lockstep
// refuses it; run with -malloc_limit_mb (tests/fuzz/README.md), an allocation
// the estimate did not foresee is a finding (issue 11).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "faults/mutants.h"
#include "faults/runner.h"
#include "faults/swarm.h"
#include "sim/run_estimate.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/simulation.h"

namespace {

constexpr int64_t kMaxWorld = 16;
constexpr int kMaxSteps = 2;
constexpr int kMaxLayers = 4;
constexpr int64_t kMaxTokens = 64;
constexpr int64_t kMaxHidden = 256;
constexpr uint64_t kMaxEstimateBytes = uint64_t{256} << 20;

// The scenario cut down to a size that simulates in milliseconds; false when
// its world is too large to cut (the layout fixes it).
bool ClampToSmall(lockstep::Scenario& s) {
  if (s.parallel.WorldSize() > kMaxWorld) return false;
  s.workload.steps = std::min(s.workload.steps, kMaxSteps);
  const int layers = s.workload.layers > 0 ? s.workload.layers : s.model.layers;
  // Every pipeline stage needs a layer (pp <= world <= kMaxWorld).
  s.workload.layers = std::max(std::min(layers, kMaxLayers), s.parallel.pp);
  s.model.hidden = std::min(s.model.hidden, kMaxHidden);
  for (int64_t& t : s.workload.tokens) t = std::min(t, kMaxTokens);
  for (auto& group : s.workload.dp_tokens) {
    for (int64_t& t : group) t = std::min(t, kMaxTokens);
  }
  return true;
}

// Whether the model reduces what attention DP makes per-group over ATTN_TP.
// A model that reduces its embedding (or its draft projection) over the full
// TP group while the DP groups carry different batches hangs in SGLang too
// (llama.py:432 builds VocabParallelEmbedding without use_attn_tp_group;
// llama4.py:493 passes is_dp_attention_enabled()): `hang` is then the
// faithful verdict, not a defect of the reference design
// (tests/fuzz/findings/simulate/reference-hang-embedding-tp-under-dp-attention.yaml).
bool ModelWiredForAttentionDp(const lockstep::Scenario& s) {
  if (s.parallel.Resolved().attn_dp <= 1) return true;
  if (s.workload.embedding && !s.model.embedding_attn_tp_under_dp) return false;
  return !(s.workload.speculative && s.model.draft_projection == lockstep::GroupRole::kTp);
}

const lockstep::PolicyRegistry& Registry() {
  static const lockstep::PolicyRegistry* const kRegistry =
      new lockstep::PolicyRegistry(lockstep::faults::MakePolicyRegistry());
  return *kRegistry;
}

void Run(const lockstep::Scenario& s, uint64_t seed, const char* what) {
  lockstep::SimOptions options;
  options.seed = seed;
  options.keep_trace = false;
  // What lockstep would refuse before running (faults can still make a run
  // large: a token-count fault's delta, say).
  const absl::StatusOr<lockstep::ParallelLayout> layout =
      lockstep::ParallelLayout::Build(s.parallel);
  if (!layout.ok() || lockstep::EstimateRunMemory(s, *layout, options).total > kMaxEstimateBytes) {
    return;
  }
  const absl::StatusOr<lockstep::SimResult> r =
      lockstep::faults::SimulateWithFaults(s, options, Registry());
  if (!r.ok()) return;  // a fault the scenario cannot take, an unknown policy: refused
  if (s.dispatch.policy == "reference" && ModelWiredForAttentionDp(s) &&
      lockstep::IsSilentFailure(r->verdict)) {
    const std::string yaml = lockstep::ScenarioToYaml(s);
    std::fprintf(stderr,
                 "simulate_fuzzer: the reference design gave %s (%s faults, seed %llu)\n%s\n"
                 "scenario:\n%s\n",
                 std::string(lockstep::VerdictName(r->verdict)).c_str(), what,
                 static_cast<unsigned long long>(seed), r->summary.c_str(), yaml.c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<lockstep::Scenario> parsed =
      lockstep::ParseScenario(text, "fuzz.yaml", LOCKSTEP_SOURCE_DIR "/topologies");
  if (!parsed.ok()) return 0;
  lockstep::Scenario& s = *parsed;
  if (!ClampToSmall(s)) return 0;
  const uint64_t seed = 1 + size % 7;
  Run(s, seed, "declared");
  const absl::StatusOr<lockstep::Scenario> swarm = lockstep::faults::WithSwarmFaults(s, seed);
  if (swarm.ok()) Run(*swarm, seed, "swarm");
  return 0;
}
