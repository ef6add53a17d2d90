// The custom all-reduce v2 in the simulator (kernels/protocol/custom_v2.h run
// by SimCustomAllReduce): each algorithm the tables pick runs and checks
// clean, symbolically and on numeric data, under every schedule; and the
// counting barrier's properties show — ranks that disagree on a size pass
// it and reduce mismatched shards, and a missing rank cannot be named by
// the count.

#include <set>
#include <string>

#include "dispatch/decision.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/sim_run.h"
#include "sim/simulation.h"
#include "tests/property_seeds.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::lockstep::testing::ScenarioFromYaml;
using ::testing::HasSubstr;

SimResult RunV2(const Scenario& s, uint64_t seed, const std::string& schedule = "random") {
  PolicyRegistry registry;
  SimOptions o;
  o.seed = seed;
  o.schedule = schedule;
  absl::StatusOr<SimResult> r = Simulate(s, o, registry);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

std::set<Algorithm> CustomAlgorithms(const SimResult& r) {
  std::set<Algorithm> seen;
  for (const TraceEvent& e : r.trace_events) {
    if (e.backend == BackendKind::kCustom) seen.insert(e.algorithm);
  }
  return seen;
}

// B200 at 8 ranks, hidden 8192 bf16: 1 token (16 KiB) is pushed in one shot,
// 32 and 300 tokens (512 KiB, 4.7 MiB) in two (2shot_push, up to 8 MiB), 600
// tokens (9.4 MiB) pulled in two.
const char* kB200 = R"(
name: b200-custom-v2
hardware: b200x8
parallel: {tp: 8}
model: {name: dense, hidden: 8192, layers: 2}
dispatch: {fused_backend: false, max_tokens: 1024}
workload: {steps: 4, tokens: [1, 32, 300, 600]}
)";

// H200 at 8 ranks: 1shot_push to 128 KiB (8 tokens), 2shot_pull above; and
// the CUDA graphs of 8 and 16 tokens (push, then pull on registered inputs).
const char* kH200 = R"(
name: h200-custom-v2
hardware: h200x8
parallel: {tp: 8}
model: {name: dense, hidden: 8192, layers: 2}
dispatch: {fused_backend: false, max_tokens: 1024}
workload: {steps: 4, tokens: [8, 9, 300, 16], cuda_graph_tokens: [8, 16]}
)";

TEST(CustomV2SimTest, EveryAlgorithmTheTablesPickRunsCleanOnEverySchedule) {
  const Scenario b200 = ScenarioFromYaml(kB200);
  const Scenario h200 = ScenarioFromYaml(kH200);
  const uint64_t seeds = lockstep::testing::PropertySeeds(4);
  for (const Scenario* s : {&b200, &h200}) {
    for (const char* schedule : {"random", "pct:3"}) {
      for (uint64_t seed = 1; seed <= seeds; ++seed) {
        const SimResult r = RunV2(*s, seed, schedule);
        EXPECT_EQ(r.verdict, Verdict::kClean)
            << s->name << " " << schedule << " seed " << seed << ": " << r.summary;
      }
    }
  }
  EXPECT_EQ(CustomAlgorithms(RunV2(b200, 1)),
            (std::set<Algorithm>{Algorithm::kOneShotPush, Algorithm::kTwoShotPush,
                                 Algorithm::kTwoShotPull}));
  EXPECT_EQ(CustomAlgorithms(RunV2(h200, 1)),
            (std::set<Algorithm>{Algorithm::kOneShotPush, Algorithm::kTwoShotPull}));
}

// Numeric data, at sizes lowered by the configured bound (custom_max_bytes
// 1 MiB clips the tables as SGLang clips them): B200 pushes 2 KiB in one
// shot and 400 KiB in two; H200 pushes 2 KiB and pulls 400 KiB in two shots.
TEST(CustomV2SimTest, NumericDataIsSummedInRankOrderByEveryAlgorithm) {
  for (const char* yaml : {kB200, kH200}) {
    Scenario s = ScenarioFromYaml(yaml);
    s.model.hidden = 1024;
    s.workload.tokens = {1, 200};
    s.workload.cuda_graph_tokens.clear();
    s.dispatch.custom_max_bytes = int64_t{1} << 20;
    s.workload.data = DataMode::kNumeric;
    const SimResult r = RunV2(s, 3);
    EXPECT_EQ(r.verdict, Verdict::kClean) << s.name << ": " << r.summary;
    EXPECT_EQ(CustomAlgorithms(r).size(), 2u) << s.name;
  }
}

// Rank 2 runs another token count than its peers (16 and 24 tokens: 256 and
// 384 KiB). v2's grid does not depend on the size, so under 2shot_pull the
// counting barrier passes and every rank reduces shards cut from its own
// count — a silent wrong reduction; v1 sizes its grid by the message (32 and
// 36 blocks), and the extra blocks wait for ever. At 4 tokens its peers push
// (64 KiB) while rank 2's 12 tokens (192 KiB) go to 2shot_pull: the peers
// poll for rank 2's push, which never comes.
TEST(CustomV2SimTest, ARankWithAnotherSizePassesTheCountingBarrierAndReducesWrongShards) {
  Scenario s = ScenarioFromYaml(kH200);
  s.workload.cuda_graph_tokens.clear();
  s.workload.tokens = {16};
  SimOptions o;
  o.seed = 1;
  o.customize = [](SimRun& run) { run.token_skew[2] = 8; };
  PolicyRegistry registry;
  absl::StatusOr<SimResult> pulled = Simulate(s, o, registry);
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  EXPECT_TRUE(IsSilentFailure(pulled->verdict)) << pulled->summary;
  EXPECT_NE(pulled->verdict, Verdict::kHang) << pulled->summary;

  s.dispatch.custom_allreduce_v2 = false;
  absl::StatusOr<SimResult> staged = Simulate(s, o, registry);
  ASSERT_TRUE(staged.ok()) << staged.status();
  EXPECT_EQ(staged->verdict, Verdict::kHang) << staged->summary;

  s.dispatch.custom_allreduce_v2 = true;
  s.workload.tokens = {4};
  absl::StatusOr<SimResult> pushed = Simulate(s, o, registry);
  ASSERT_TRUE(pushed.ok()) << pushed.status();
  EXPECT_EQ(pushed->verdict, Verdict::kHang) << pushed->summary;
  EXPECT_THAT(pushed->details.dump(), HasSubstr("push slot of rank 2"));
}

}  // namespace
}  // namespace lockstep
