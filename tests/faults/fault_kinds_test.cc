// The fault table: the placement keys each kind honours, refusal of the ones
// it does not, and placements that fire where they say.

#include "faults/fault_kinds.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "faults/fault_injector.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario/scenario_yaml.h"
#include "tests/scratch_dir.h"

namespace lockstep::faults {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Topologies() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

// Every key each kind honours, written out: a change to the table shows here.
TEST(FaultKindsTest, EveryKindHonoursExactlyTheseKeys) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"workspace_initialized_view", {"at_step", "at_phase"}},
      {"capacity_view", {"at_step", "at_phase", "max_tokens"}},
      {"dtype_seen", {"at_step", "at_phase", "dtype"}},
      {"token_count_view", {"at_step", "at_phase", "delta"}},
      {"contiguity_view", {"at_step", "at_phase"}},
      {"backend_flag", {"at_step", "at_phase"}},
      {"library_unavailable", {}},
      {"tracing_state", {"at_step", "at_phase"}},
      {"graph_capture_state", {"at_step", "at_phase"}},
      {"workspace_bound_to_other_peers", {"workspace"}},
      {"stale_workspace_binding", {"workspace"}},
      {"both_moe_groups_tagged", {}},
      {"tp_group_tagged", {}},
      {"kernel_launch_failure", {"at_call", "at_step", "at_layer", "at_site", "at_phase"}},
      {"illegal_address", {"at_call", "at_step", "at_layer", "at_site", "at_phase"}},
      {"rank_killed", {"at_call", "at_step", "at_layer", "at_site", "at_phase"}},
      {"straggler", {"at_step", "delay_us"}},
      {"lost_write", {"epoch"}},
      {"late_write", {"steps"}},
      {"uncleared_buffer", {"epoch"}},
      {"graph_input_unrecorded", {"count"}},
      {"negative_zero_inputs",
       {"at_call", "at_step", "at_layer", "at_site", "at_phase", "row", "rows"}},
      {"negative_subnormal_inputs",
       {"at_call", "at_step", "at_layer", "at_site", "at_phase", "row", "rows"}},
      {"sm_count_divergence", {"at_step", "at_phase", "sm_count"}},
      {"fp32_acc_env", {"at_step", "at_phase"}},
      {"workspace_alloc_failure", {}},
      {"tuner_timing_skew", {"favour"}},
      {"warm_tuner_cache", {"tactic"}},
      {"seq_len_view", {"at_step", "at_phase", "delta"}},
      {"clock_skew", {"at_step", "at_phase", "skew_us"}},
  };
  ASSERT_EQ(AllFaultKinds().size(), expected.size());
  for (const FaultKindInfo& kind : AllFaultKinds()) {
    std::vector<std::string> keys;
    for (FaultKey k : kind.keys) keys.emplace_back(FaultKeyName(k));
    for (const FaultParam& p : kind.params) keys.emplace_back(p.name);
    auto it = expected.find(std::string(kind.name));
    ASSERT_NE(it, expected.end()) << kind.name;
    EXPECT_EQ(keys, it->second) << kind.name;
  }
}

TEST(FaultKindsTest, EachStageHasItsEffectAndGpusInjectWhatActsOutsideTheMemoryModel) {
  for (const FaultKindInfo& kind : AllFaultKinds()) {
    SCOPED_TRACE(std::string(kind.name));
    const FaultEffect& e = kind.effect;
    switch (kind.stage) {
      case FaultStage::kSetUp:
        EXPECT_TRUE(e.tags != nullptr || e.bind != nullptr);
        break;
      case FaultStage::kInit:
      case FaultStage::kLocalState:
        EXPECT_NE(e.local, nullptr);
        break;
      case FaultStage::kStep:
        EXPECT_NE(e.delay_us, nullptr);
        break;
      case FaultStage::kCall:
        EXPECT_TRUE(e.kills || e.error != nullptr);
        break;
      case FaultStage::kInput:
        EXPECT_NE(e.input_flags, 0);
        break;
      case FaultStage::kMemory:
        EXPECT_TRUE(e.drops_push != nullptr || e.delays_push != nullptr ||
                    e.drops_clear != nullptr || e.unrecorded_graph_inputs != nullptr);
        break;
    }
    EXPECT_EQ(kind.gpu_injectable,
              kind.stage != FaultStage::kMemory && kind.stage != FaultStage::kInput);
  }
}

// A scenario file with one fault entry, run through the command line.
// The scenario RunSim writes the fault into, up to its faults: list.
constexpr char kFaultKeyScenario[] =
    "version: 1\nname: fault-key\nhardware: h200x8\nparallel: {tp: 4}\n"
    "model: llama-3-70b\nworkload: {steps: 2, tokens: [4], layers: 2}\n";

// A scenario file (`scenario`, then `fault` as its one fault entry), run
// through the command line: its stderr into `err`, its stdout into `out`
// when given.
int RunSim(const std::string& fault, std::string* err,
           const std::string& scenario = kFaultKeyScenario, std::string* out = nullptr) {
  // One file per process: ctest runs each test in its own process, in
  // parallel, and other checkouts' tests share the scratch directory.
  const std::string path =
      lockstep::testing::ScratchDir() + "/fault_key-" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream file(path);
    file << scenario << "faults:\n  - " << fault << "\n";
  }
  std::ostringstream o, e;
  const std::vector<std::string> argv = {"lockstep", "sim", path};
  const int code = cli::Main(argv, o, e);
  *err = e.str();
  if (out != nullptr) *out = o.str();
  std::filesystem::remove(path);
  return code;
}

TEST(FaultKindsTest, AnUnhonouredKeyExitsTwoNamingTheKeyAndTheLine) {
  std::string err;
  EXPECT_EQ(RunSim("{kind: lost_write, ranks: [1], at_call: 3}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr(":8: faults: at_call: fault 'lost_write' does not honour this key"));
  EXPECT_THAT(err, HasSubstr("(it takes: ranks, epoch; stage: memory)"));
  EXPECT_EQ(RunSim("{kind: workspace_alloc_failure, ranks: [1], at_step: 1}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_step: fault 'workspace_alloc_failure' does not honour this key"));
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], epoch: 2}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("epoch: fault 'kernel_launch_failure' has no parameter 'epoch'"));
  // A parameter's own bound (a tuner candidate is 0, 1 or 2), and a kind whose
  // workload is off (no workload.autotune here).
  EXPECT_EQ(RunSim("{kind: warm_tuner_cache, ranks: [1], tactic: 3}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("fault 'warm_tuner_cache' parameter 'tactic' must be between 0 and "
                             "2, got 3"));
  EXPECT_EQ(RunSim("{kind: warm_tuner_cache, ranks: [1], tactic: 2}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("fault 'warm_tuner_cache' does not apply to this scenario"));
}

// Phase placement (workload.cuda_graph_tokens): a call or input fault at
// eager or replay calls, a local-state fault during the capture only; the
// others, and any phase without graphs, are refused with the key.
TEST(FaultKindsTest, PhasePlacementIsRefusedWhereItCannotFire) {
  std::string err;
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], at_phase: replay}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr(":8: faults: at_phase: fault 'kernel_launch_failure' is placed at "
                             "replay but the run captures no CUDA graph"));
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], at_phase: replya}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("names no phase 'replya' (phases: eager, capture, replay)"));
  EXPECT_EQ(RunSim("{kind: lost_write, ranks: [1], at_phase: eager}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_phase: fault 'lost_write' does not honour this key"));
}

TEST(FaultKindsTest, PhasePlacementWithGraphs) {
  // stderr and stdout together.
  auto run = [](const std::string& fault, std::string* err) {
    std::string out;
    const int code = RunSim(fault, err,
                            "version: 1\nname: fault-phase\nhardware: h200x8\nparallel: {tp: 4}\n"
                            "model: llama-3-70b\ndispatch: {fused_backend: true, max_tokens: 256}\n"
                            "workload: {steps: 2, tokens: [64, 3], layers: 2, "
                            "cuda_graph_tokens: [1, 4]}\n",
                            &out);
    *err += out;
    return code;
  };
  std::string err;
  EXPECT_EQ(run("{kind: kernel_launch_failure, ranks: [1], at_phase: capture}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_phase: fault 'kernel_launch_failure' acts on a call as it "
                             "runs, and nothing runs while a graph is captured"));
  EXPECT_EQ(run("{kind: dtype_seen, ranks: [1], dtype: fp32, at_phase: replay}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("only at_phase: capture (without at_step) confines it"));
  EXPECT_EQ(run("{kind: dtype_seen, ranks: [1], dtype: fp32, at_phase: capture, at_step: 1}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("only at_phase: capture (without at_step) confines it"));
  // Step 0 (64 tokens) runs eagerly: nothing replays there.
  EXPECT_EQ(run("{kind: kernel_launch_failure, ranks: [1], at_step: 0, at_phase: replay}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_phase: rank 1 makes no all-reduce at step 0 (replay)"));
  // Placed where it can fire, it fires there (and the reference stops the job).
  EXPECT_EQ(run("{kind: kernel_launch_failure, ranks: [1], at_step: 1, at_phase: replay}", &err),
            cli::kExitOk)
      << err;
  EXPECT_THAT(err, AllOf(HasSubstr("fail_stop"), HasSubstr("step 1 "), HasSubstr("(replay)")));
  EXPECT_EQ(run("{kind: dtype_seen, ranks: [1], dtype: fp32, at_phase: capture}", &err),
            cli::kExitOk)
      << err;
}

// Layer and site placement: honoured by call and input faults only; a typo,
// a layer past the model's, at_call beside them, or a place the rank never
// calls is refused with the key before anything runs.
TEST(FaultKindsTest, LayerAndSitePlacementIsRefusedWhereItCannotFire) {
  std::string err;
  EXPECT_EQ(RunSim("{kind: lost_write, ranks: [1], at_site: attn_out}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr(":8: faults: at_site: fault 'lost_write' does not honour this key"));
  EXPECT_EQ(RunSim("{kind: capacity_view, ranks: [1], at_layer: 1}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_layer: fault 'capacity_view' does not honour this key"));
  EXPECT_THAT(err,
              HasSubstr("(it takes: ranks, at_step, at_phase, max_tokens; stage: local state)"));
  EXPECT_EQ(RunSim("{kind: straggler, ranks: [1], at_site: attn_out}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_site: fault 'straggler' does not honour this key"));
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], at_site: atn_out}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr(":8: faults: at_site: fault 'kernel_launch_failure' names no call "
                             "site 'atn_out'; did you mean 'attn_out'?"));
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], at_layer: 2}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr(":8: faults[0].at_layer: layer 2 is past the model's last layer (it "
                             "runs 2: layers 0 to 1); the fault would never fire"));
  EXPECT_EQ(
      RunSim("{kind: kernel_launch_failure, ranks: [1], at_call: 1, at_site: attn_out}", &err),
      cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_call: fault 'kernel_launch_failure' is placed by at_site too"));
  // A dense model has no MoE reduction: the fault would never fire.
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], at_step: 1, at_site: moe}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("faults[0].at_site: rank 1 makes no all-reduce at step 1 moe under "
                             "policy reference (its call sites there: "));
  EXPECT_THAT(err, HasSubstr("attn_out"));
}

TEST(FaultKindsTest, AFaultPlacedPastTheLastStepIsRefused) {
  std::string err;
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], at_step: 2}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("at_step: step 2 is past the end of the run"));
}

SimResult SimulateFault(const std::string& fault) {
  absl::StatusOr<Scenario> s = ParseScenario(
      "version: 1\nname: placed\nhardware: h200x8\nparallel: {tp: 4}\nmodel: llama-3-70b\n"
      "workload: {steps: 3, tokens: [4], layers: 2}\nfaults:\n  - " +
          fault + "\n",
      "placed.yaml", Topologies());
  EXPECT_TRUE(s.ok()) << s.status();
  const PolicyRegistry registry = MakePolicyRegistry();
  absl::StatusOr<SimResult> r = SimulateWithFaults(*s, SimOptions{}, registry);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

// An input fault placed on rows lands in those rows of the call's input
// only: under a policy that does not sanitise inputs, a −0 in a row the call
// has hangs the fused kernel's readers; the same fault on a row past the
// call's 4 tokens injects nothing and the run stays clean.
TEST(FaultKindsTest, AnInputFaultPlacedOnRowsLandsInThoseRows) {
  auto run = [](const std::string& fault) {
    absl::StatusOr<Scenario> s = ParseScenario(
        "version: 1\nname: rows\nhardware: h200x8\nparallel: {tp: 4}\nmodel: llama-3-70b\n"
        "dispatch: {fused_backend: true, max_tokens: 256}\n"
        "workload: {steps: 2, tokens: [4], layers: 2}\nfaults:\n  - " +
            fault + "\n",
        "rows.yaml", Topologies());
    EXPECT_TRUE(s.ok()) << s.status();
    const PolicyRegistry registry = MakePolicyRegistry();
    SimOptions o;
    o.policy = "no-input-sanitising";
    absl::StatusOr<SimResult> r = SimulateWithFaults(*s, o, registry);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : SimResult{};
  };
  EXPECT_EQ(run("{kind: negative_zero_inputs, ranks: [1], at_step: 1, row: 3}").verdict,
            Verdict::kHang);
  EXPECT_EQ(run("{kind: negative_zero_inputs, ranks: [1], at_step: 1, row: 4, rows: 2}").verdict,
            Verdict::kClean);
  // rows without row, and no row at all, are refused with the key.
  std::string err;
  EXPECT_EQ(RunSim("{kind: negative_zero_inputs, ranks: [1], rows: 2}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("rows: fault 'negative_zero_inputs' places its rows from `row`"));
  EXPECT_EQ(RunSim("{kind: negative_zero_inputs, ranks: [1], row: 0, rows: 0}", &err),
            cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("must strike at least one row"));
  EXPECT_EQ(RunSim("{kind: kernel_launch_failure, ranks: [1], row: 0}", &err), cli::kExitUsage);
  EXPECT_THAT(err, HasSubstr("fault 'kernel_launch_failure' has no parameter 'row'"));
}

TEST(FaultKindsTest, ACallFaultPlacedAtAStepFiresAtThatStep) {
  const SimResult first = SimulateFault("{kind: kernel_launch_failure, ranks: [2], at_step: 1}");
  ASSERT_EQ(first.verdict, Verdict::kFailStop) << first.summary;
  EXPECT_EQ(first.details["site"], "step 1 embedding") << first.summary;
  EXPECT_EQ(first.details["rank"], 2);
  // With at_call, the call is counted from the start of that step.
  const SimResult third =
      SimulateFault("{kind: kernel_launch_failure, ranks: [2], at_step: 2, at_call: 2}");
  ASSERT_EQ(third.verdict, Verdict::kFailStop) << third.summary;
  // (the dense MLP's sum of layer 0 is completed at layer 1's input)
  EXPECT_EQ(third.details["site"], "step 2 layer 1 dense_deferred") << third.summary;
  // A sticky error from there on: its first call names where it began.
  const SimResult sticky = SimulateFault("{kind: illegal_address, ranks: [0], at_step: 2}");
  ASSERT_EQ(sticky.verdict, Verdict::kFailStop) << sticky.summary;
  EXPECT_EQ(sticky.details["site"], "step 2 embedding");
}

// "at_step: 1, at_layer: 1, at_site: attn_out" is one call: the error is
// raised there, and the report names it.
TEST(FaultKindsTest, ACallFaultPlacedAtAStepLayerAndSiteFiresAtThatCall) {
  const SimResult r = SimulateFault(
      "{kind: kernel_launch_failure, ranks: [2], at_step: 1, at_layer: 1, at_site: attn_out}");
  ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
  EXPECT_EQ(r.details["site"], "step 1 layer 1 attn_out") << r.summary;
  EXPECT_EQ(r.details["rank"], 2);
  // Without a step: the first call at that layer and site.
  const SimResult site = SimulateFault(
      "{kind: kernel_launch_failure, ranks: [1], at_site: "
      "dense_deferred}");
  ASSERT_EQ(site.verdict, Verdict::kFailStop) << site.summary;
  EXPECT_EQ(site.details["site"], "step 0 layer 1 dense_deferred") << site.summary;
  // A layer alone: its first call.
  const SimResult layer =
      SimulateFault("{kind: illegal_address, ranks: [3], at_step: 2, at_layer: 1}");
  ASSERT_EQ(layer.verdict, Verdict::kFailStop) << layer.summary;
  EXPECT_EQ(layer.details["site"], "step 2 layer 1 dense_deferred") << layer.summary;
  // A rank killed there never makes the call.
  const SimResult killed =
      SimulateFault("{kind: rank_killed, ranks: [1], at_step: 1, at_layer: 0, at_site: attn_out}");
  ASSERT_EQ(killed.verdict, Verdict::kFailStop) << killed.summary;
  EXPECT_THAT(killed.summary, HasSubstr("dead rank 1"));
}

// On a MoE model, "at_step: 1, at_layer: 3, at_site: moe" is the
// post-experts reduction of layer 3 in step 1.
TEST(FaultKindsTest, AFaultPlacedAtAMoeSiteFiresAtThatReduction) {
  absl::StatusOr<Scenario> s = ParseScenario(
      "version: 1\nname: placed-moe\nhardware: h200x8\nparallel: {tp: 8, ep: 4}\n"
      "model: deepseek-v3\ndispatch: {fused_backend: true, max_tokens: 256}\n"
      "workload: {steps: 2, tokens: [1, 64], layers: 5}\nfaults:\n"
      "  - {kind: kernel_launch_failure, ranks: [6], at_step: 1, at_layer: 3, at_site: moe}\n",
      "placed-moe.yaml", Topologies());
  ASSERT_TRUE(s.ok()) << s.status();
  const PolicyRegistry registry = MakePolicyRegistry();
  absl::StatusOr<SimResult> r = SimulateWithFaults(*s, SimOptions{}, registry);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->verdict, Verdict::kFailStop) << r->summary;
  EXPECT_EQ(r->details["site"], "step 1 layer 3 moe") << r->summary;
  EXPECT_EQ(r->details["rank"], 6);
  // The placement survives a report: written out and read back.
  absl::StatusOr<Scenario> again = ParseScenario(ScenarioToYaml(*s), "again.yaml", Topologies());
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->faults.size(), 1u);
  EXPECT_EQ(again->faults[0].at_step, 1);
  EXPECT_EQ(again->faults[0].at_layer, 3);
  EXPECT_EQ(again->faults[0].at_site, "moe");
}

// Placed by site, a one-shot fault strikes each rank once: at the first call
// there, not at a second call at the same site (a fallback, the second part
// of a plan). An input fault holds from that call on.
TEST(FaultKindsTest, AFaultPlacedBySiteStrikesEachRankAtItsFirstCallThere) {
  absl::StatusOr<Scenario> s = ParseScenario(
      "version: 1\nname: placed\nhardware: h200x8\nparallel: {tp: 4}\nmodel: llama-3-70b\n"
      "dispatch: {fused_backend: true, max_tokens: 256}\n"
      "workload: {steps: 3, tokens: [4], layers: 2}\n",
      "placed.yaml", Topologies());
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(s->parallel);
  ASSERT_TRUE(layout.ok());
  FaultSpec error;
  error.kind = "kernel_launch_failure";
  error.ranks = {1, 2};
  error.at_step = 1;
  error.at_site = "attn_out";
  FaultSpec input;
  input.kind = "negative_zero_inputs";
  input.ranks = {1};
  input.at_layer = 1;
  absl::StatusOr<std::unique_ptr<FaultInjector>> plan =
      FaultInjector::Create(*s, *layout, {error, input});
  ASSERT_TRUE(plan.ok()) << plan.status();
  FaultInjector& f = **plan;
  const DecisionRecord record;
  auto at = [](int64_t call, int step, int layer, SiteKind kind) {
    return CallPlace{call, step, 0, SiteRef{step, layer, kind}};
  };
  // Step 0's attention output: not placed there.
  EXPECT_TRUE(f.BeforeBackendCall(1, at(1, 0, 0, SiteKind::kAttnOut), record).ok());
  // Step 1, layer 0: the first attn_out of the step raises, on each rank.
  EXPECT_FALSE(f.BeforeBackendCall(1, at(6, 1, 0, SiteKind::kAttnOut), record).ok());
  EXPECT_FALSE(f.BeforeBackendCall(2, at(6, 1, 0, SiteKind::kAttnOut), record).ok());
  // A fallback at the same site (the next call) and layer 1's attn_out do not.
  EXPECT_TRUE(f.BeforeBackendCall(1, at(7, 1, 0, SiteKind::kAttnOut), record).ok());
  EXPECT_TRUE(f.BeforeBackendCall(1, at(9, 1, 1, SiteKind::kAttnOut), record).ok());
  // Rank 3 is not struck.
  EXPECT_TRUE(f.BeforeBackendCall(3, at(6, 1, 0, SiteKind::kAttnOut), record).ok());
  // The input fault: nothing before layer 1, then every input from there on.
  EXPECT_EQ(f.InputFault(1, at(1, 0, 0, SiteKind::kAttnOut)).flags, 0);
  EXPECT_NE(f.InputFault(1, at(3, 0, 1, SiteKind::kAttnOut)).flags, 0);
  EXPECT_NE(f.InputFault(1, at(4, 0, 1, SiteKind::kDenseDeferred)).flags, 0);
  EXPECT_NE(f.InputFault(1, at(5, 1, 0, SiteKind::kAttnOut)).flags, 0);
  EXPECT_EQ(f.InputFault(0, at(5, 1, 0, SiteKind::kAttnOut)).flags, 0);
}

TEST(FaultKindsTest, ARankKilledAtAStepNeverMakesThatStepsCalls) {
  const SimResult r = SimulateFault("{kind: rank_killed, ranks: [3], at_step: 2}");
  ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("dead rank 3"));
}

}  // namespace
}  // namespace lockstep::faults
