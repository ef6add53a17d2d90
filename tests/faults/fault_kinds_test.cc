// The fault table: the placement keys each kind honours, refusal of the ones
// it does not, and placements that fire where they say.

#include "faults/fault_kinds.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario/scenario_yaml.h"
#include "tests/scratch_dir.h"

namespace lockstep::faults {
namespace {

using ::testing::HasSubstr;

std::string Topologies() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

// Every key each kind honours, written out: a change to the table shows here.
TEST(FaultKindsTest, EveryKindHonoursExactlyTheseKeys) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"workspace_initialized_view", {"at_step"}},
      {"capacity_view", {"at_step", "max_tokens"}},
      {"dtype_seen", {"at_step", "dtype"}},
      {"token_count_view", {"at_step", "delta"}},
      {"contiguity_view", {"at_step"}},
      {"backend_flag", {"at_step"}},
      {"library_unavailable", {}},
      {"tracing_state", {"at_step"}},
      {"graph_capture_state", {"at_step"}},
      {"workspace_bound_to_other_peers", {"workspace"}},
      {"stale_workspace_binding", {"workspace"}},
      {"both_moe_groups_tagged", {}},
      {"tp_group_tagged", {}},
      {"kernel_launch_failure", {"at_call", "at_step"}},
      {"illegal_address", {"at_call", "at_step"}},
      {"rank_killed", {"at_call", "at_step"}},
      {"straggler", {"at_step", "delay_us"}},
      {"lost_write", {"epoch"}},
      {"late_write", {"steps"}},
      {"uncleared_buffer", {"epoch"}},
      {"negative_zero_inputs", {"at_call", "at_step"}},
      {"negative_subnormal_inputs", {"at_call", "at_step"}},
      {"sm_count_divergence", {"at_step", "sm_count"}},
      {"fp32_acc_env", {"at_step"}},
      {"workspace_alloc_failure", {}},
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
                    e.drops_clear != nullptr);
        break;
    }
    EXPECT_EQ(kind.gpu_injectable,
              kind.stage != FaultStage::kMemory && kind.stage != FaultStage::kInput);
  }
}

// A scenario file with one fault entry, run through the command line.
int RunSim(const std::string& fault, std::string* err) {
  const std::string path = lockstep::testing::ScratchDir() + "/fault_key.yaml";
  {
    std::ofstream out(path);
    out << "version: 1\nname: fault-key\nhardware: h200x8\nparallel: {tp: 4}\n"
           "model: llama-3-70b\nworkload: {steps: 2, tokens: [4], layers: 2}\nfaults:\n  - "
        << fault << "\n";
  }
  std::ostringstream o, e;
  const std::vector<std::string> argv = {"lockstep", "sim", path};
  const int code = cli::Main(argv, o, e);
  *err = e.str();
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

TEST(FaultKindsTest, ARankKilledAtAStepNeverMakesThatStepsCalls) {
  const SimResult r = SimulateFault("{kind: rank_killed, ranks: [3], at_step: 2}");
  ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
  EXPECT_THAT(r.summary, HasSubstr("dead rank 3"));
}

}  // namespace
}  // namespace lockstep::faults
