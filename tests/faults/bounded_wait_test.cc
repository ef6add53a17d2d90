// Time means the same in the simulator as on GPUs: a peer that has not arrived
// within the scenario's wait budget (in virtual time) ends the call exactly as
// the GPU's bounded wait or the NCCL watchdog ends it, with the same report
// (kernels/protocol/wait_report.h words both), while lateness within the
// budget stays clean.

#include <string>

#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "faults/swarm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/protocol/wait_report.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// tp8 on one H200 node; `dispatch` picks the path, rank 5 runs `delay_us` late
// at step 1.
Scenario Late(const std::string& dispatch, int64_t delay_us, const std::string& timeouts) {
  return testing::ScenarioFromYaml(
      "version: 1\nname: late\nhardware: h200x8\nparallel: {tp: 8}\nmodel: llama-3-70b\n"
      "dispatch: " +
      dispatch +
      "\n"
      "workload: {steps: 3, tokens: [1, 16], layers: 2}\n"
      "timeouts: " +
      timeouts +
      "\n"
      "faults:\n  - {kind: straggler, ranks: [5], at_step: 1, delay_us: " +
      std::to_string(delay_us) + "}\n");
}

SimResult Simulated(const Scenario& s, uint64_t seed = 1) {
  static const PolicyRegistry* const registry = new PolicyRegistry(faults::MakePolicyRegistry());
  SimOptions o;
  o.seed = seed;
  absl::StatusOr<SimResult> r = faults::SimulateWithFaults(s, o, *registry);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

constexpr char kFused[] = "{fused_backend: true, max_tokens: 256}";
constexpr char kNccl[] = "{fused_backend: false, custom_allreduce: false}";

TEST(BoundedWaitTest, APeerLatePastTheKernelBudgetEndsTheFusedCallAsTheGpuDoes) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const SimResult r = Simulated(Late(kFused, 5000, "{kernel_wait_ms: 1}"), seed);
    ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
    EXPECT_EQ(r.detector, Detector::kBackendRaised);
    // The GPU's words (CheckLamportStatus): the waiting rank, the budget it
    // waited, and rank 5 named as the one that never arrived.
    EXPECT_THAT(r.summary,
                ContainsRegex("raised in fused all-reduce at .*: DEADLINE_EXCEEDED: fused "
                              "all-reduce: rank [0-7] waited 0\\.001 s for rank 5's push into "
                              "buffer [0-2] at element [0-9]+; rank 5 never arrived"));
  }
}

TEST(BoundedWaitTest, LatenessWithinTheBudgetIsClean) {
  // 300 µs late against a 1 ms poll bound: every wait tolerates it.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const SimResult r = Simulated(Late(kFused, 300, "{kernel_wait_ms: 1}"), seed);
    EXPECT_EQ(r.verdict, Verdict::kClean) << r.summary;
  }
  // The default budgets (10 s, 60 s) dwarf any modelled lateness.
  EXPECT_EQ(Simulated(Late(kFused, 5000, "{kernel_wait_ms: 10000}")).verdict, Verdict::kClean);
}

TEST(BoundedWaitTest, APeerLatePastTheWatchdogEndsTheNcclCallAsTheGpuDoes) {
  const SimResult r = Simulated(Late(kNccl, 5000, "{watchdog_ms: 1}"));
  ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
  EXPECT_EQ(r.detector, Detector::kBackendRaised);
  // GpuNcclBackend::WaitFor's words, on the group named as the hardware
  // runner names it.
  EXPECT_THAT(r.summary,
              ContainsRegex("raised in nccl all-reduce at .*: DEADLINE_EXCEEDED: NCCL "
                            "all-reduce on tp \\[[0-7,]+\\] \\(call [0-9]+ of the group\\) "
                            "did not complete within 0\\.001 s; the watchdog aborted "
                            "the communicator \\(a peer never joined the call\\)"));
  // The fused kernel's budget does not bound NCCL.
  EXPECT_EQ(Simulated(Late(kNccl, 5000, "{kernel_wait_ms: 1}")).verdict, Verdict::kClean);
}

TEST(BoundedWaitTest, AStageLatePastTheWatchdogEndsTheNextStagesReceive) {
  Scenario s = testing::CatalogueScenario("pp2-tp4-ep2-qwen3-h200");
  s.expect.reset();
  s.timeouts.watchdog_ms = 1;
  s.timeouts.kernel_wait_ms = 1;
  FaultSpec f;
  f.kind = "straggler";
  f.ranks = {0};
  f.at_step = 1;
  f.params["delay_us"] = "5000";
  s.faults = {f};
  const SimResult r = Simulated(s);
  ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
  // Whichever wait of a peer runs out first: the stage-1 receive or a call
  // of rank 0's own groups; every one of them is a timed-out wait naming
  // what it waited for.
  EXPECT_THAT(r.summary, ContainsRegex("a peer did not take part before the watchdog's deadline|"
                                       "never arrived|the watchdog aborted the communicator"));
}

TEST(BoundedWaitTest, TheStragglersOutcomeFollowsTheBudgets) {
  Scenario s = Late(kFused, 5000, "{kernel_wait_ms: 1}");
  EXPECT_EQ(faults::FaultOutcome(s.faults.front(), s), Verdict::kFailStop);
  EXPECT_THAT(faults::AcceptableVerdicts(s),
              ::testing::ElementsAre(Verdict::kClean, Verdict::kFailStop));
  s.faults.front().params["delay_us"] = "300";  // under half of 1 ms
  EXPECT_EQ(faults::FaultOutcome(s.faults.front(), s), Verdict::kClean);
  EXPECT_THAT(faults::AcceptableVerdicts(s), ::testing::ElementsAre(Verdict::kClean));
}

// A dead rank leaves its peers waiting for good; the report names the wait
// that ends the job and when: the NCCL watchdog for peers blocked in NCCL,
// the kernel's own bounded wait (sooner) for peers polling in the fused
// kernel.
TEST(BoundedWaitTest, ADeadRanksPeersAreEndedByTheTimeoutOfWhatTheyWaitIn) {
  struct Case {
    const char* dispatch;
    const char* what;
    int64_t budget_ns;
  };
  for (const Case& c : {Case{kNccl, "the NCCL watchdog", int64_t{60'000'000'000}},
                        Case{kFused, "the fused kernel's bounded wait", int64_t{10'000'000'000}}}) {
    const SimResult r = Simulated(testing::ScenarioFromYaml(
        std::string("version: 1\nname: killed\nhardware: h200x8\nparallel: {tp: 8}\n"
                    "model: llama-3-70b\ndispatch: ") +
        c.dispatch +
        "\nworkload: {steps: 2, tokens: [1], layers: 2}\n"
        "faults:\n  - {kind: rank_killed, ranks: [7], at_call: 2}\n"));
    ASSERT_EQ(r.verdict, Verdict::kFailStop) << r.summary;
    EXPECT_THAT(r.summary, HasSubstr(std::string(c.what) + " of rank")) << r.summary;
    const nlohmann::json& fires = r.details["fires"];
    EXPECT_EQ(fires["what"], c.what);
    // The first to fire is the earliest wait plus its budget.
    int64_t earliest = -1;
    for (const nlohmann::json& b : r.details["blocked"]) {
      const auto since = b["since_ns"].get<int64_t>();
      if (earliest < 0 || since < earliest) earliest = since;
    }
    EXPECT_EQ(fires["virtual_time_ns"].get<int64_t>(), earliest + c.budget_ns) << c.what;
  }
}

TEST(WaitReportTest, TheWordsOfEveryExpiredWait) {
  EXPECT_EQ(protocol::LamportFailure(protocol::ProtocolError::kWaitExpired, 0, 3, 2, 4096,
                                     10'000'000'000ull)
                .ToString(),
            "DEADLINE_EXCEEDED: fused all-reduce: rank 0 waited 10.000 s for rank 3's push into "
            "buffer 2 at element 4096; rank 3 never arrived");
  EXPECT_TRUE(protocol::LamportFailure(protocol::ProtocolError::kNone, 0, 0, 0, 0, 0).ok());
  EXPECT_EQ(protocol::LamportFailure(protocol::ProtocolError::kClearFailed, 1, -1, 0, 8, 0).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(protocol::LamportFailure(protocol::ProtocolError::kAborted, 1, 2, 0, 8, 0).code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(protocol::WatchdogExpired("all-reduce", "tp [0,1]", 7, 60'000'000'000ull).message(),
            "NCCL all-reduce on tp [0,1] (call 7 of the group) did not complete within 60.000 s; "
            "the watchdog aborted the communicator (a peer never joined the call)");
  EXPECT_THAT(
      protocol::WatchdogExpired("reduce-scatter", "tp [0,1]", std::nullopt, 1'000'000).message(),
      HasSubstr("NCCL reduce-scatter on tp [0,1] did not complete within 0.001 s"));
  EXPECT_EQ(protocol::PeerMissedDeadline("activations from rank 3").message(),
            "activations from rank 3: a peer did not take part before the watchdog's deadline");
}

}  // namespace
}  // namespace lockstep
