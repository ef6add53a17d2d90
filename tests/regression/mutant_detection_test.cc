// Every known-bad dispatch policy (faults/mutants.h) is caught — a silent
// verdict — on every catalogue scenario built to expose it, and the mutation
// score over the whole catalogue stays 100%.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "faults/explore.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property_seeds.h"
#include "tests/regression/regression_util.h"

namespace lockstep::regression {
namespace {

// The catalogue scenarios (relative to topologies/scenarios/) that target
// each mutant: the layout or fault that exposes its bug. A new mutant needs
// its row here (MutantTargetsTest fails until it has one).
const std::map<std::string, std::vector<std::string>>& Targets() {
  static const auto* const kTargets = new std::map<std::string, std::vector<std::string>>{
      {"swallow-kernel-error",
       {"faults/tp8-kernel-launch-failure", "faults/tp32-gb200-kernel-launch-failure",
        "faults/tp8-ep4-kernel-launch-failure", "faults/dpattn-dp8-ep8-kernel-launch-failure",
        "faults/tp8-deepseek-v4-gb200-uncleared-buffer"}},
      // Equal-size EP and MoE-TP groups with other peers: tp4·ep2 shapes (not
      // the PCIe box: SGLang 0.5.23 configures no fused workspace below SM90).
      {"both-moe-groups-tagged",
       {"tp4-ep2-qwen3-h200", "faults/tp4-ep2-both-moe-groups-tagged", "pp2-tp4-ep2-qwen3-h200",
        "faults/pp2-tp4-ep2-both-moe-groups-tagged"}},
      {"no-hybrid-fusion-gate",
       {"tp4-ep2-qwen3-h200", "tp8-ep2-deepseek-v3-h200", "tp8-ep4-deepseek-v3-h200",
        "dpattn-dp2-ep2-deepseek-v3-h200", "dpattn-dp2-ep4-qwen3-h200", "pp2-tp4-ep2-qwen3-h200",
        "pp2-tp8-ep2-deepseek-v3-gb200", "tp4-ep2-qwen3-pcie"}},
      {"workspace-matched-by-size",
       {"faults/tp4-ep2-moedp2-bound-to-other-peers", "faults/tp4-ep2-moedp2-stale-binding",
        "faults/dpattn-ep4-attn-bound-to-other-peers"}},
      {"capacity-from-local-view",
       {"faults/tp8-capacity-view", "faults/tp16-gb200-capacity-view",
        "faults/tp8-ep4-moedp2-capacity-view", "faults/tp8-deepseek-v4-gb200-capacity-view"}},
      {"pp-flush-ep-only", {"pp2-tp4-ep2-qwen3-h200", "pp2-tp8-ep2-deepseek-v3-gb200"}},
      {"allreduce-replicated-output",
       {"tp4-ep2-qwen3-h200", "tp8-ep2-deepseek-v3-h200", "tp8-ep8-deepseek-v3-b200",
        "tp16-deepseek-v3-gb200", "dpattn-dp2-deepseek-v3-h200", "dpattn-dp2-ep8-deepseek-v3-h200",
        "tp8-ep4-moedp2-deepseek-v3-h200"}},
      {"draft-projection-over-tp", {"dpattn-dp2-speculative-deepseek-v3-h200"}},
      {"init-failure-without-vote",
       {"faults/tp8-workspace-alloc-failure", "faults/tp32-gb200-workspace-alloc-failure",
        "faults/tp8-ep4-moedp2-workspace-alloc-failure", "faults/tp8-library-unavailable",
        "faults/tp16-gb200-library-unavailable", "faults/tp8-ep8-b200-library-unavailable"}},
      {"per-rank-grid-size",
       {"faults/tp8-sm-count-divergence", "faults/tp8-ep8-b200-sm-count-divergence",
        "faults/tp2-pcie-sm-count-divergence"}},
      {"sentinel-zero-and-signbit",
       {"faults/tp8-negative-subnormal-ftz", "faults/tp8-deepseek-v4-gb200-negative-subnormal-ftz",
        "faults/tp8-replay-negative-subnormal-ftz"}},
      {"no-input-sanitising",
       {"faults/tp8-negative-zero-inputs", "faults/tp2-h200x2-negative-zero-inputs"}},
      // Only where the previous call in the buffer was larger than the next
      // one does stale data survive the next call's pushes (TensorRT-LLM
      // #6237); on tp8-uncleared-buffer every slot is rewritten first.
      {"no-clear-readback", {"faults/tp8-deepseek-v4-gb200-uncleared-buffer"}},
      {"fp32-acc-from-rank-env",
       {"faults/tp8-fp32-acc-env", "faults/tp8-deepseek-v4-gb200-fp32-acc-env"}},
      {"local-predicates",
       {"faults/tp8-workspace-initialized-view", "faults/tp8-capacity-view",
        "faults/tp8-dtype-seen", "faults/tp8-contiguity-view", "faults/tp8-backend-flag",
        "faults/tp8-tracing-state", "faults/tp8-graph-capture-state",
        "faults/tp8-ep2-workspace-initialized-view",
        "faults/pp9-tp16-2xnvl72-workspace-initialized-view", "faults/dpattn-token-count-view",
        "faults/dpattn-dp8-ep8-token-count-view", "faults/dpattn-dp8-token-count-view",
        "faults/pp2-dpattn-dp72-ep72-2xnvl72-token-count-view"}},
      {"tactic-from-local-timings", {"faults/tp8-tuner-timing-skew"}},
      {"warm-cache-skips-tuner", {"faults/tp8-warm-tuner-cache"}},
      {"spec-skip-from-local-length", {"faults/tp8-seq-len-view"}},
      {"abort-from-local-clock", {"faults/tp8-clock-skew"}},
      // The final norm is reached by every layout that defers the last sum.
      {"defer-at-last-layer",
       {"tp16-deepseek-v3-gb200", "tp2-qwen3-h200x2", "dpattn-dp2-deepseek-v3-h200"}},
      {"pp-flush-skipped",
       {"pp2-tp4-ep2-qwen3-h200", "pp2-tp8-ep2-deepseek-v3-gb200", "pp9-tp16-deepseek-v3-2xnvl72"}},
      {"dense-mlp-over-attn-tp",
       {"dpattn-dp2-deepseek-v3-h200", "dpattn-dp8-deepseek-v3-h200",
        "tp8-ep4-moedp2-deepseek-v3-h200"}},
      {"reduce-scatter-under-sum-len",
       {"dpattn-dp2-deepseek-v3-h200", "dpattn-dp2-ep4-qwen3-h200"}},
      // The catalogue's one batch whose count is not a multiple of attention
      // TP: 3 tokens on attention TP 4.
      {"dp-tokens-not-aligned", {"dpattn-dp2-speculative-deepseek-v3-h200"}},
      {"embedding-over-tp-under-dp-attention",
       {"dpattn-dp2-deepseek-v3-h200", "dpattn-dp8-ep8-deepseek-v3-h200",
        "dpattn-dp2-ep4-qwen3-h200"}},
      // Lamport protocol safeguards. The previous call's tail survives only
      // where a smaller call follows a larger one and a larger one then
      // lands in that buffer before a larger clear does.
      {"clear-sized-by-current-call", {"tp8-lamport-sizes-llama3-h200"}},
      {"sum-from-own-rank", {"tp8-llama3-h200", "tp2-qwen3-h200x2", "dpattn-dp2-deepseek-v3-h200"}},
      {"two-buffer-rotation",
       {"tp8-lamport-sizes-llama3-h200", "tp8-llama3-h200", "dpattn-dp8-deepseek-v3-h200"}},
      {"unbounded-kernel-wait", {"faults/tp8-rank-killed", "faults/tp16-gb200-rank-killed"}},
      // One predicate input each, read from the rank's own state.
      {"workspace-flag-from-local-view",
       {"faults/tp8-workspace-initialized-view", "faults/tp8-ep2-workspace-initialized-view"}},
      {"dtype-from-local-cache", {"faults/tp8-dtype-seen"}},
      {"contiguity-from-local-view", {"faults/tp8-contiguity-view"}},
      {"backend-flag-from-local-env", {"faults/tp8-backend-flag"}},
      {"tracing-from-local-state", {"faults/tp8-tracing-state"}},
      {"graph-capture-from-local-state", {"faults/tp8-graph-capture-state"}},
      {"library-check-unvoted",
       {"faults/tp8-library-unavailable", "faults/tp16-gb200-library-unavailable",
        "faults/tp8-ep8-b200-library-unavailable"}},
      // Stores land out of order only under relaxed memory.
      {"custom-flag-without-release", {"tp8-relaxed-memory-llama3-h200"}},
      // CUDA graphs: the replayed graph chosen from the agreed batch; the
      // Lamport buffer index read on the device at replay.
      {"graph-replay-from-local-batch", {"dpattn-dp2-cuda-graphs-deepseek-v3-h200"}},
      {"lamport-counter-on-host", {"tp8-cuda-graphs-llama3-h200"}},
      {"graph-registration-unchecked",
       {"faults/tp8-graph-input-unrecorded", "faults/tp8-graph-inputs-all-unrecorded"}},
      {"graph-registration-skipped-when-empty", {"faults/tp8-graph-inputs-all-unrecorded"}},
      // Workspace set-up as a collective: a rank whose allocation failed
      // still joins the exchange.
      {"setup-failure-skips-exchange",
       {"faults/tp8-workspace-alloc-failure", "faults/tp32-gb200-workspace-alloc-failure",
        "faults/tp8-ep4-moedp2-workspace-alloc-failure"}},
  };
  return *kTargets;
}

std::vector<std::string> MutantNames() {
  std::vector<std::string> names;
  for (const faults::MutantInfo& m : faults::AllMutants()) names.emplace_back(m.name);
  return names;
}

TEST(MutantTargetsTest, EveryMutantHasTargetScenariosAndEveryTargetExists) {
  std::set<std::string> mutants;
  for (const std::string& m : MutantNames()) {
    mutants.insert(m);
    EXPECT_TRUE(Targets().count(m) > 0) << "mutant " << m << " has no target scenarios";
  }
  for (const auto& [mutant, scenarios] : Targets()) {
    EXPECT_TRUE(mutants.count(mutant) > 0) << "targets listed for unknown mutant " << mutant;
    for (const std::string& name : scenarios) {
      absl::StatusOr<Scenario> s = LoadCatalogueScenario(name);
      EXPECT_TRUE(s.ok()) << mutant << " target " << name << ": " << s.status();
    }
  }
}

class MutantDetectionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MutantDetectionTest, IsCaughtOnEveryScenarioThatTargetsIt) {
  const std::string& mutant = GetParam();
  const faults::MutantInfo* info = nullptr;
  for (const faults::MutantInfo& m : faults::AllMutants()) {
    if (m.name == mutant) info = &m;
  }
  ASSERT_NE(info, nullptr);
  auto it = Targets().find(mutant);
  ASSERT_NE(it, Targets().end()) << "no targets for " << mutant;
  bool expected_class_seen = false;
  for (const std::string& name : it->second) {
    SCOPED_TRACE(name);
    std::optional<SilentRun> caught = FirstSilentFailure(name, mutant);
    EXPECT_TRUE(caught.has_value())
        << mutant << " (" << info->source << ") is not caught on " << name << " in seeds 1-"
        << kSeeds << " (exposed by " << info->exposed_by << ")";
    if (caught) expected_class_seen |= caught->result.verdict == info->expected;
  }
  EXPECT_TRUE(expected_class_seen)
      << mutant << " never gave " << VerdictName(info->expected) << " on its targets";
}

// The decision logs are compacted as a run goes (CompactDecisionLogs): a
// report must not depend on it. Every target of every mutant, compacted
// every four records, against the same run with the whole log kept (a
// decision log asked for turns compaction off): the same verdict, summary
// and details (the first divergent decision with its call positions, the
// wait-for graph).
TEST_P(MutantDetectionTest, CompactingTheDecisionLogsChangesNoReport) {
  const std::string& mutant = GetParam();
  auto it = Targets().find(mutant);
  ASSERT_NE(it, Targets().end()) << "no targets for " << mutant;
  for (const std::string& name : it->second) {
    absl::StatusOr<Scenario> scenario = LoadCatalogueScenario(name);
    ASSERT_TRUE(scenario.ok()) << scenario.status();
    for (uint64_t seed = 1; seed <= lockstep::testing::PropertySeeds(2); ++seed) {
      SimOptions options;
      options.seed = seed;
      options.policy = mutant;
      options.keep_trace = false;
      options.compact_decisions_at = 4;
      absl::StatusOr<SimResult> compacted =
          faults::SimulateWithFaults(*scenario, options, Registry());
      options.compact_decisions_at = 0;
      options.keep_decision_log = true;
      absl::StatusOr<SimResult> whole = faults::SimulateWithFaults(*scenario, options, Registry());
      ASSERT_TRUE(compacted.ok()) << compacted.status();
      ASSERT_TRUE(whole.ok()) << whole.status();
      EXPECT_EQ(compacted->verdict, whole->verdict) << name << " seed " << seed;
      EXPECT_EQ(compacted->summary, whole->summary) << name << " seed " << seed;
      EXPECT_EQ(compacted->details.dump(), whole->details.dump()) << name << " seed " << seed;
      EXPECT_EQ(compacted->trace_hash, whole->trace_hash) << name << " seed " << seed;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mutants, MutantDetectionTest, ::testing::ValuesIn(MutantNames()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return TestNameOf(param.param);
                         });

}  // namespace
}  // namespace lockstep::regression
