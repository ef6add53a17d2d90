// Run-ahead (docs/SIMULATOR.md, "Run-ahead"): a rank posts the NCCL
// all-reduces it checks and goes on, and waits for them where a host
// synchronises. It changes how the ranks are interleaved, not what they do:
// every rank's calls keep their virtual times and every verdict its
// detector. What depends on the interleaving may move, as between seeds:
// the trace hash (it hashes the calls in the order the ranks recorded
// them), and which member of a group reports a finding first.

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "faults/mutants.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report/report.h"
#include "sim/sim_run.h"
#include "sim/simulation.h"
#include "tests/property_seeds.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::lockstep::testing::CatalogueScenario;
using ::lockstep::testing::PropertySeeds;
using ::lockstep::testing::ScenarioFromYaml;
using ::testing::HasSubstr;

SimResult Simulated(const Scenario& s, const SimOptions& o) {
  static const PolicyRegistry* const registry = new PolicyRegistry(faults::MakePolicyRegistry());
  absl::StatusOr<SimResult> r = faults::SimulateWithFaults(s, o, *registry);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

// Every field of an event a reader of the trace sees.
using EventKey = std::tuple<int32_t, uint64_t, int32_t, int32_t, uint32_t, int, int, bool, int32_t,
                            int64_t, uint64_t, int64_t, int64_t, bool, int>;

EventKey KeyOf(const TraceEvent& e) {
  return {e.rank,
          e.site.Instance(),
          static_cast<int32_t>(e.site.part),
          e.object,
          e.group.value,
          static_cast<int>(e.backend),
          static_cast<int>(e.algorithm),
          e.norm_fused,
          e.blocks,
          e.tokens,
          e.seq,
          e.begin_ns,
          e.end_ns,
          e.failed,
          static_cast<int>(e.site.phase)};
}

// The events of a run, each rank's in the order it recorded them (the ranks
// interleave differently under run-ahead; each rank's own order does not).
std::vector<EventKey> PerRankEvents(const SimResult& r) {
  std::vector<EventKey> keys;
  for (const TraceEvent& e : r.trace_events) keys.push_back(KeyOf(e));
  std::stable_sort(keys.begin(), keys.end(), [](const EventKey& a, const EventKey& b) {
    return std::get<0>(a) < std::get<0>(b);
  });
  return keys;
}

// The report without what depends on how the ranks were interleaved.
nlohmann::json ReportOf(const Scenario& s, const SimOptions& o, const SimResult& r) {
  nlohmann::json report = MakeReport(s, o, r);
  report.erase("trace_hash");
  report["stats"].erase("schedule_steps");
  return report;
}

// Runs `s` under `policy` with and without run-ahead on seeds 1..seeds and
// expects the same verdict from the same detector and, for a clean run, the
// same report and the same calls at the same times. Returns how many calls
// the run-ahead runs posted.
uint64_t ExpectSameRunWithAndWithoutRunAhead(const Scenario& s, const std::string& policy,
                                             uint64_t seeds) {
  uint64_t posted = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    SimOptions ahead;
    ahead.seed = seed;
    ahead.policy = policy;
    SimOptions interleaved = ahead;
    interleaved.run_ahead = false;
    const SimResult a = Simulated(s, ahead);
    const SimResult b = Simulated(s, interleaved);
    SCOPED_TRACE(s.name + ", policy " + (policy.empty() ? "default" : policy) + ", seed " +
                 std::to_string(seed));
    EXPECT_EQ(a.verdict, b.verdict) << a.summary << "\n" << b.summary;
    EXPECT_EQ(a.detector, b.detector) << a.summary << "\n" << b.summary;
    EXPECT_FALSE(a.interleaved_rerun);
    posted += a.posted_calls;
    if (a.verdict != Verdict::kClean) {
      // Which member's check, or which rank's wait, reports first depends on
      // the interleaving, as between two seeds.
      continue;
    }
    EXPECT_EQ(ReportOf(s, ahead, a).dump(1), ReportOf(s, interleaved, b).dump(1));
    EXPECT_EQ(a.virtual_ns, b.virtual_ns);
    EXPECT_EQ(a.trace_events.size(), b.trace_events.size());
    EXPECT_TRUE(PerRankEvents(a) == PerRankEvents(b))
        << "the per-rank call timelines differ: " << a.summary;
    EXPECT_EQ(b.posted_calls, 0u);
  }
  return posted;
}

// Layouts of every shape the catalogue has: one TP group, TP with EP and
// MoE-DP, DP attention, pipelines, CUDA graphs, PCIe (NCCL only) and the
// GB200 fabric.
TEST(RunAheadTest, CleanRunsKeepEveryCallsTimesAndTheirReport) {
  const uint64_t seeds = PropertySeeds(3);
  uint64_t posted = 0;
  for (const char* name : {"tp8-llama3-h200", "tp8-llama3-pcie", "tp4-ep2-qwen3-pcie",
                           "tp8-llama3-b200", "tp8-ep4-moedp2-deepseek-v3-h200",
                           "dpattn-dp2-deepseek-v3-h200", "dpattn-dp2-cuda-graphs-deepseek-v3-h200",
                           "pp2-tp4-ep2-qwen3-h200", "tp16-deepseek-v3-gb200"}) {
    const Scenario s = CatalogueScenario(name);
    ASSERT_EQ(s.expect, Verdict::kClean) << name;
    posted += ExpectSameRunWithAndWithoutRunAhead(s, "", seeds);
  }
  // Not vacuous: the catalogue's NCCL calls were posted (1 104 over seeds
  // 1-3, 736 on seed 1 alone, which the sanitizer stage runs).
  EXPECT_GT(posted, 300u * seeds);
}

// Findings of the kinds the mutants give on layouts with NCCL calls: wrong
// contributors, wrong offsets, hangs.
TEST(RunAheadTest, FindingsKeepTheirVerdictAndWords) {
  struct Case {
    const char* policy;
    const char* scenario;
  };
  for (const Case& c : {Case{"allreduce-replicated-output", "tp4-ep2-qwen3-pcie"},
                        Case{"defer-at-last-layer", "tp8-llama3-pcie"},
                        Case{"no-hybrid-fusion-gate", "tp8-ep2-deepseek-v3-h200"},
                        Case{"two-buffer-rotation", "tp8-llama3-b200"},
                        Case{"two-buffer-rotation", "pp2-tp4-ep2-qwen3-h200"},
                        Case{"local-predicates", "dpattn-dp2-deepseek-v3-h200"},
                        Case{"sglang-pr30700", "tp4-ep2-qwen3-h200"},
                        Case{"both-moe-groups-tagged", "tp4-ep2-qwen3-h200"}}) {
    Scenario s = CatalogueScenario(c.scenario);
    s.expect.reset();
    ExpectSameRunWithAndWithoutRunAhead(s, c.policy, PropertySeeds(4));
  }
}

// `s` under `o` with run-ahead turned on for its first run (the only way
// into it for a run with faults, which keeps every call interleaved; a rerun
// is interleaved), and under `o` as it is.
struct ForcedRun {
  SimResult ahead;
  SimResult interleaved;
  int runs = 0;    // of the forced side: 2 when it was run again interleaved
  int forced = 0;  // of those, how many were turned to run-ahead
};
ForcedRun RunForcedAndInterleaved(const Scenario& s, const SimOptions& o) {
  ForcedRun out;
  SimOptions ahead = o;
  ahead.customize = [&out](SimRun& run) {
    if (out.runs++ > 0) return;  // a rerun is interleaved
    ASSERT_TRUE(run.ctx.streams.empty());
    run.ctx.streams.assign(static_cast<size_t>(run.ctx.layout.world_size()), SimContext::Stream{});
    ++out.forced;
  };
  out.ahead = Simulated(s, ahead);
  out.interleaved = Simulated(s, o);
  return out;
}

// A hang found while a rank waits for what it posted names the NCCL call
// and the peers it waits for, in the interleaved model's words. No
// fault-free catalogue run hangs there (a hang needs a rank-divergent
// choice, which needs divergent local state); tp8-backend-flag's fault sets
// rank 1's flag at a step's start, outside the calls run-ahead changes, so
// the test turns run-ahead on for it: under local-predicates rank 1 posts
// NCCL all-reduces while its peers wait in the fused kernel for it.
TEST(RunAheadTest, AHangWhileDrainingNamesTheCallAndTheMissingPeers) {
  Scenario s = CatalogueScenario("faults/tp8-backend-flag");
  s.expect.reset();
  s.dispatch.custom_allreduce = false;  // rank 1 falls back to NCCL
  for (uint64_t seed = 1; seed <= PropertySeeds(3); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SimOptions o;
    o.seed = seed;
    o.policy = "local-predicates";
    const ForcedRun r = RunForcedAndInterleaved(s, o);
    const SimResult& a = r.ahead;
    ASSERT_EQ(r.forced, 1);
    ASSERT_EQ(a.verdict, Verdict::kHang) << a.summary;
    EXPECT_GT(a.posted_calls, 0u);
    const std::string text = FormatResult(s, o, a);
    EXPECT_THAT(text, HasSubstr("rank 1 waits in NCCL all_reduce on tp [0,1,2,3,4,5,6,7] call "));
    EXPECT_EQ(text.substr(0, text.find("trace hash")),
              FormatResult(s, o, r.interleaved).substr(0, text.find("trace hash")));
  }
}

// A watchdog that fires on a posted call: the rank had run on past the call
// that failed, so the seed is run again interleaved, and the result is that
// run's. No fault-free catalogue run meets it (the ranks of a group arrive
// together there); a straggler does, and its delay is taken at a step's
// start, outside the calls run-ahead changes, so the test turns run-ahead
// on for one.
TEST(RunAheadTest, AWatchdogOnAPostedCallFallsBackToTheInterleavedRun) {
  const Scenario s = ScenarioFromYaml(R"(
name: watchdog-on-posted-call
hardware: h200x8
parallel: {tp: 8}
model: llama-3-70b
dispatch: {fused_backend: false, custom_allreduce: false}
workload: {steps: 3, tokens: [1, 16], layers: 2}
timeouts: {watchdog_ms: 1}
faults:
  - {kind: straggler, ranks: [5], at_step: 1, delay_us: 5000}
)");
  SimOptions o;
  o.seed = 1;
  const ForcedRun r = RunForcedAndInterleaved(s, o);
  const SimResult& a = r.ahead;
  const SimResult& b = r.interleaved;
  ASSERT_EQ(r.forced, 1);
  EXPECT_EQ(r.runs, 2);
  EXPECT_TRUE(a.interleaved_rerun) << a.summary;
  EXPECT_EQ(a.verdict, Verdict::kFailStop) << a.summary;
  EXPECT_THAT(a.summary, HasSubstr("the watchdog aborted the communicator"));
  EXPECT_EQ(ReportOf(s, o, a).dump(1), ReportOf(s, o, b).dump(1));
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.posted_calls, 0u);
}

// An input whose rows a fault struck is several runs: its posted call keeps
// it as a tensor, and its group's call is summed by the general path with
// its peers' inputs, which were held as single runs (SimComm::Post). The
// calls' 512 tokens are past the fused kernel's 256, so they take NCCL,
// where −0 is data. The fault is taken when the input is made, outside the
// calls run-ahead changes, so the test turns run-ahead on for it: every
// rank's calls keep their times and the run its report.
TEST(RunAheadTest, AnInputInSeveralRunsIsSummedAsTheInterleavedRunSumsIt) {
  const Scenario s = ScenarioFromYaml(R"(
name: rows-on-posted-call
hardware: h200x8
parallel: {tp: 4}
model: llama-3-70b
dispatch: {fused_backend: true, custom_allreduce: false, max_tokens: 256}
workload: {steps: 3, tokens: [512], layers: 2}
faults:
  - {kind: negative_zero_inputs, ranks: [1], at_step: 1, row: 2}
)");
  for (uint64_t seed = 1; seed <= PropertySeeds(3); ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    SimOptions o;
    o.seed = seed;
    const ForcedRun r = RunForcedAndInterleaved(s, o);
    const SimResult& a = r.ahead;
    const SimResult& b = r.interleaved;
    ASSERT_EQ(r.forced, 1);
    EXPECT_GT(a.posted_calls, 0u);
    EXPECT_EQ(b.posted_calls, 0u);
    ASSERT_EQ(a.verdict, Verdict::kClean) << a.summary;
    ASSERT_EQ(b.verdict, Verdict::kClean) << b.summary;
    EXPECT_EQ(ReportOf(s, o, a).dump(1), ReportOf(s, o, b).dump(1));
    EXPECT_EQ(a.virtual_ns, b.virtual_ns);
    EXPECT_TRUE(PerRankEvents(a) == PerRankEvents(b));
  }
}

// Faults, relaxed memory and numeric data keep every call interleaved.
TEST(RunAheadTest, RunsThatNeedEveryCallInterleavedPostNone) {
  Scenario numeric = CatalogueScenario("tp8-llama3-pcie");
  numeric.workload.data = DataMode::kSampled;
  Scenario relaxed = CatalogueScenario("tp8-llama3-pcie");
  relaxed.memory = MemoryModel::kRelaxed;
  Scenario faulted = CatalogueScenario("tp8-llama3-pcie");
  faulted.faults = {FaultSpec{}};
  faulted.faults.front().kind = "straggler";
  faulted.faults.front().ranks = {5};
  for (const Scenario* s : {&numeric, &relaxed, &faulted}) {
    SimOptions o;
    o.seed = 1;
    const SimResult r = Simulated(*s, o);
    EXPECT_GT(r.rank_calls, 0u) << s->name;
    EXPECT_EQ(r.posted_calls, 0u) << s->name;
  }
  SimOptions o;
  o.seed = 1;
  EXPECT_GT(Simulated(CatalogueScenario("tp8-llama3-pcie"), o).posted_calls, 0u);
}

}  // namespace
}  // namespace lockstep
