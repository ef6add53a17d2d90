// The hardware runner's CPU parts: the plan (--dry-run) and the comparison
// of a hardware run with a simulated one.

#include "hw/hw_plan.h"

#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/hw_compare.h"

namespace lockstep::hw {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Scenario(const std::string& name) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/topologies/scenarios/hw/" + name;
}

TEST(HwPlanTest, DryRunNamesRanksGroupsWorkspacesAndTheBackendOfEverySite) {
  std::ostringstream out, err;
  const std::vector<std::string> argv = {"lockstep", "hw", Scenario("tp2-ep2-qwen3-h200x2.yaml"),
                                         "--dry-run"};
  ASSERT_EQ(cli::Main(argv, out, err), cli::kExitOk) << err.str();
  const std::string plan = out.str();
  EXPECT_THAT(plan, HasSubstr("mpirun -np 2 lockstep hw"));
  EXPECT_THAT(plan, HasSubstr("rank 1 -> node 0, GPU 1"));
  EXPECT_THAT(plan, HasSubstr("attn_tp [0,1]: 512 tokens x 2048 bf16"));
  EXPECT_THAT(plan, HasSubstr("moe [0,1]: 512 tokens x 2048 bf16"));
  EXPECT_THAT(plan, HasSubstr("step 0 layer 0 attn_out"));
  // The protocol per site: kernel, algorithm, the fused norm epilogue, grid.
  EXPECT_THAT(plan, HasSubstr("fused one_shot 1 blk (1 tokens)"));
  EXPECT_THAT(plan, HasSubstr("fused one_shot+rmsnorm 1 blk (1 tokens)"));
  EXPECT_THAT(plan, HasSubstr("simulated verdict of this plan: clean"));
}

TEST(HwPlanTest, ThePlanShowsTheCustomAllReduceRegionsTheHardwareCreates) {
  std::ostringstream out, err;
  const std::vector<std::string> argv = {"lockstep", "hw", Scenario("tp2-ep2-qwen3-h200x2.yaml"),
                                         "--dry-run"};
  ASSERT_EQ(cli::Main(argv, out, err), cli::kExitOk) << err.str();
  // SGLang's default v2 generation, sized to its 16 MiB bound (inclusive);
  // at two ranks it pushes up to the bound: 2 halves x 2 slots of 16 MiB.
  EXPECT_THAT(out.str(), HasSubstr("custom all-reduce regions"));
  EXPECT_THAT(out.str(), HasSubstr("[0,1]: generation 2, messages <= 16777216 bytes, 16.0 MiB "
                                   "staging + 72 KiB flags + 64.00 MiB push slots per rank"));
}

TraceEvent Call(int rank, int object, uint64_t seq, BackendKind backend, int64_t tokens = 16) {
  TraceEvent e;
  e.rank = rank;
  e.object = object;
  e.seq = seq;
  e.backend = backend;
  e.algorithm = backend == BackendKind::kFused ? Algorithm::kOneShot : Algorithm::kNone;
  e.tokens = tokens;
  e.site = SiteRef{0, 0, SiteKind::kAttnOut};
  return e;
}

TEST(HwCompareTest, IdenticalRunsAgree) {
  SimResult a;
  a.trace_events = {Call(0, 0, 0, BackendKind::kFused), Call(1, 0, 0, BackendKind::kFused)};
  EXPECT_THAT(CompareRuns(a, a), IsEmpty());
}

TEST(HwCompareTest, NamesTheVerdictAndEveryCallThatDiffers) {
  SimResult hw, sim;
  hw.verdict = Verdict::kClean;
  sim.verdict = Verdict::kHang;
  hw.trace_events = {Call(0, 0, 0, BackendKind::kFused), Call(1, 0, 0, BackendKind::kNccl),
                     Call(1, 0, 1, BackendKind::kNccl)};
  sim.trace_events = {Call(0, 0, 0, BackendKind::kFused), Call(1, 0, 0, BackendKind::kFused),
                      Call(0, 2, 0, BackendKind::kNccl)};
  const std::vector<std::string> d = CompareRuns(hw, sim);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], "verdict: hardware clean, simulator hang");
  EXPECT_THAT(d[1], HasSubstr("rank 1 group 0 call 0: hardware step 0 layer 0 attn_out nccl"));
  EXPECT_THAT(d[1], HasSubstr("simulator step 0 layer 0 attn_out fused one_shot"));
  EXPECT_THAT(d[2], HasSubstr("rank 1 group 0 call 1: hardware made"));
  EXPECT_THAT(d[3], HasSubstr("rank 0 group 2 call 0: the simulator made"));
}

TEST(HwCompareTest, WhereBothRunsStoppedOnlyCallsBothMadeAreCompared) {
  SimResult hw, sim;
  hw.verdict = sim.verdict = Verdict::kFailStop;
  TraceEvent failed = Call(0, 0, 1, BackendKind::kFused);
  failed.failed = true;
  hw.trace_events = {Call(0, 0, 0, BackendKind::kFused), failed};  // rank 0 ran into its wait
  sim.trace_events = {Call(0, 0, 0, BackendKind::kFused)};         // the simulator stopped first
  EXPECT_THAT(CompareRuns(hw, sim), IsEmpty());
  sim.trace_events = {Call(0, 0, 0, BackendKind::kNccl)};
  EXPECT_THAT(CompareRuns(hw, sim),
              ElementsAre(HasSubstr("rank 0 group 0 call 0: hardware step 0 layer 0 attn_out "
                                    "fused")));
}

TEST(HwCompareTest, StopsListingAfterTheLimit) {
  SimResult hw, sim;
  for (uint64_t i = 0; i < 30; ++i) hw.trace_events.push_back(Call(0, 0, i, BackendKind::kNccl));
  const std::vector<std::string> d = CompareRuns(hw, sim, 5);
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d.back(), "... and 25 more differing calls");
}

}  // namespace
}  // namespace lockstep::hw
