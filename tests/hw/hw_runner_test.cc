// `lockstep hw` on two GPUs: each test launches `mpiexec -n 2 lockstep hw ...`
// and reads the report. Skips, saying why, with fewer than two GPUs.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/gpu/gpu_test_environment.h"
#include "tests/scratch_dir.h"

namespace lockstep {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

struct HwRun {
  int code = -1;
  std::string output;
  nlohmann::json report;
};

// A path fixed at build time, or the environment's override (a build carried
// to another machine: LOCKSTEP_CLI, LOCKSTEP_SOURCE_DIR, LOCKSTEP_MPIEXEC).
std::string Setting(const char* name, const char* built) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != '\0' ? env : built;
}

// Runs `lockstep hw SCENARIO ARGS` on two ranks; the report is rank 0's.
HwRun RunHw(const std::string& scenario, const std::string& args) {
  const std::string report =
      absl::StrFormat("%s/hw_report_%d.json", lockstep::testing::ScratchDir(), getpid());
  std::remove(report.c_str());
  const std::string command =
      absl::StrFormat("%s -n 2 %s %s hw %s/topologies/scenarios/hw/%s --report %s %s 2>&1",
                      Setting("LOCKSTEP_MPIEXEC", LOCKSTEP_MPIEXEC), LOCKSTEP_MPIEXEC_PREFLAGS,
                      Setting("LOCKSTEP_CLI", LOCKSTEP_CLI),
                      Setting("LOCKSTEP_SOURCE_DIR", LOCKSTEP_SOURCE_DIR), scenario, report, args);
  HwRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) run.output += buffer;
  const int status = pclose(pipe);
  run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(report);
  if (in) run.report = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return run;
}

// Mutant runs end by the kernels' bounded waits and the watchdog: short ones.
constexpr const char* kFast = "--kernel-wait-ms 2000 --watchdog-ms 4000";

class HwRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { LOCKSTEP_REQUIRE_GPUS(2); }
};

TEST_F(HwRunnerTest, CleanScenariosAreCleanAndAgreeWithTheSimulator) {
  for (const char* scenario :
       {"tp2-qwen3-h200x2.yaml", "tp2-ep2-qwen3-h200x2.yaml", "dpattn-dp2-ep2-qwen3-h200x2.yaml"}) {
    const HwRun r = RunHw(scenario, "--compare");
    EXPECT_EQ(r.code, 0) << scenario << "\n" << r.output;
    EXPECT_EQ(r.report.value("verdict", ""), "clean") << scenario << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("compare: the simulator agrees")) << scenario;
  }
}

// The whole chain on hardware: with the fusion backend off, the custom
// all-reduce (GpuCustomBackend on regions shared through cuMem handles)
// serves every call up to its bound and NCCL the one past it; --compare
// checks every call's backend against the simulated run of the same seed.
TEST_F(HwRunnerTest, TheCustomAllReduceRunsOnTheGpusAndAgreesWithTheSimulator) {
  const HwRun r = RunHw("tp2-custom-llama3-h200x2.yaml", "--compare");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.report.value("verdict", ""), "clean") << r.output;
  EXPECT_THAT(r.output, HasSubstr("compare: the simulator agrees"));
}

TEST_F(HwRunnerTest, DivergentLocalStateIsMaskedByTheReference) {
  const HwRun r = RunHw("tp2-h200x2-workspace-initialized-view.yaml", "--compare");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.report.value("verdict", ""), "clean") << r.output;
}

TEST_F(HwRunnerTest, LocalPredicatesMutantStopsByTheWatchdogNamingTheInput) {
  const HwRun r = RunHw("tp2-h200x2-workspace-initialized-view.yaml",
                        std::string("--policy local-predicates ") + kFast);
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_EQ(r.report.value("verdict", ""), "fail_stop") << r.output;
  EXPECT_THAT(r.report.value("summary", ""), HasSubstr("workspace_initialized")) << r.output;
}

TEST_F(HwRunnerTest, ConsistencyModeStopsTheMutantBeforeTheCall) {
  const HwRun r = RunHw("tp2-h200x2-workspace-initialized-view.yaml",
                        std::string("--policy local-predicates --consistency 1 ") + kFast);
  EXPECT_EQ(r.report.value("verdict", ""), "fail_stop") << r.output;
  EXPECT_THAT(r.report.value("summary", ""), HasSubstr("decisions diverged")) << r.output;
  EXPECT_THAT(r.report.value("summary", ""), HasSubstr("workspace_initialized")) << r.output;
}

TEST_F(HwRunnerTest, AllocationFailureIsVotedOffAndTheUnvotedMutantStops) {
  const HwRun reference = RunHw("tp2-h200x2-workspace-alloc-failure.yaml", "--compare");
  EXPECT_EQ(reference.report.value("verdict", ""), "clean") << reference.output;
  const HwRun mutant = RunHw("tp2-h200x2-workspace-alloc-failure.yaml",
                             std::string("--policy init-failure-without-vote ") + kFast);
  EXPECT_EQ(mutant.report.value("verdict", ""), "fail_stop") << mutant.output;
}

TEST_F(HwRunnerTest, KernelErrorFailsStopNamingTheRankThatRaised) {
  const HwRun reference =
      RunHw("tp2-h200x2-kernel-launch-failure.yaml", std::string("--compare ") + kFast);
  EXPECT_EQ(reference.code, 0) << reference.output;
  EXPECT_EQ(reference.report.value("verdict", ""), "fail_stop") << reference.output;
  // The root cause, not rank 0's bounded wait that followed from it.
  EXPECT_THAT(reference.report.value("summary", ""), HasSubstr("rank 1 raised"))
      << reference.output;
  EXPECT_THAT(reference.report.value("summary", ""), HasSubstr("unspecified launch failure"));
}

// The simulator's verdict for this mutant is a hang (its waits are unbounded).
// On GPUs the bounded waits end it, and what they leave is worse than a
// stop: rank 0's fused norm kernel gives up on rank 1, the mutant swallows
// that error too and falls back to NCCL, where it meets rank 1's own
// fallback — and the call completes with rank 0's partial sum. The runner
// must never hang and must not call it clean.
TEST_F(HwRunnerTest, SwallowingKernelErrorsNeverHangsAndIsNeverClean) {
  const HwRun mutant = RunHw("tp2-h200x2-kernel-launch-failure.yaml",
                             std::string("--policy swallow-kernel-error ") + kFast);
  EXPECT_EQ(mutant.code, 1) << mutant.output;
  EXPECT_THAT(mutant.report.value("verdict", ""), AnyOf("fail_stop", "wrong_peer"))
      << mutant.output;
}

TEST_F(HwRunnerTest, ARankThatLeavesIsNamedByItsPeer) {
  const HwRun r = RunHw("tp2-h200x2-rank-killed.yaml", "");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.report.value("verdict", ""), "fail_stop") << r.output;
  EXPECT_THAT(r.report.value("summary", ""),
              AnyOf(HasSubstr("rank 1 never arrived"), HasSubstr("watchdog")))
      << r.output;
}

TEST_F(HwRunnerTest, AReductionOverTheWrongPeersIsCaughtOnTheGpus) {
  const HwRun r = RunHw("tp2-ep2-qwen3-h200x2.yaml", "--policy allreduce-replicated-output");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_EQ(r.report.value("verdict", ""), "wrong_peer") << r.output;
}

}  // namespace
}  // namespace lockstep
