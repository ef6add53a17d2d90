#include "faults/explore.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <span>
#include <tuple>

#include "faults/fault_injector.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "faults/shrink.h"
#include "faults/swarm.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/report/report.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/sim_run.h"
#include "tests/catalogue_scenarios.h"
#include "tests/property_seeds.h"
#include "tests/sanitizer_build.h"

namespace lockstep::faults {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using testing::Topologies;
Scenario Load(const std::string& relative) { return testing::LoadCatalogueScenario(relative); }

TEST(ExploreTest, ResultsAreIdenticalForAnyNumberOfJobs) {
  const std::vector<Scenario> scenarios = {Load("tp4-ep2-qwen3-h200.yaml"),
                                           Load("tp8-llama3-h200.yaml")};
  const PolicyRegistry registry = MakePolicyRegistry();
  // Seed, verdict, trace hash, summary and signature. Which runs keep their
  // decision records from the start depends on the order threads finish
  // runs in; what they report must not.
  using Outcome = std::tuple<uint64_t, Verdict, uint64_t, std::string, std::string>;
  std::vector<std::vector<Outcome>> runs;
  for (const char* policy : {"", "local-predicates"}) {
    for (int jobs : {1, 2, 3}) {
      ExploreOptions o;
      o.seeds = 40;
      o.swarm = true;
      o.policy = policy;
      o.jobs = jobs;
      absl::StatusOr<ExploreResult> r = Explore(scenarios, o, registry);
      ASSERT_TRUE(r.ok());
      std::vector<Outcome> flat;
      for (const SeedOutcome& out : r->outcomes) {
        flat.emplace_back(out.seed, out.verdict, out.trace_hash, out.summary, out.signature);
      }
      runs.push_back(flat);
    }
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
  EXPECT_EQ(runs[3], runs[4]);
  EXPECT_EQ(runs[3], runs[5]);
  // The mutant fails often enough that runs keep their records from the start.
  const auto failed = [](const std::vector<Outcome>& v) {
    return std::count_if(v.begin(), v.end(),
                         [](const Outcome& o) { return !std::get<4>(o).empty(); });
  };
  EXPECT_GT(failed(runs[3]), static_cast<std::ptrdiff_t>(runs[3].size() / 10));
}

// A shard that cannot exist is refused before anything runs, and so is a
// count over kMaxShards (the most lockstep merge lists missing shards of).
TEST(ExploreTest, ShardsThatCannotExistAreRefused) {
  const std::vector<Scenario> scenarios = {Load("tp8-llama3-h200.yaml")};
  const PolicyRegistry registry = MakePolicyRegistry();
  for (const auto& [index, count] : std::vector<std::pair<uint64_t, uint64_t>>{
           {0, 0}, {3, 3}, {0, kMaxShards + 1}, {5, uint64_t{1} << 62}}) {
    ExploreOptions o;
    o.seeds = 1;
    o.shard_index = index;
    o.shard_count = count;
    absl::StatusOr<ExploreResult> r = Explore(scenarios, o, registry);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << index << "/" << count;
    EXPECT_THAT(r.status().message(), HasSubstr("the count must be in [1, 1048576]"));
  }
  ExploreOptions o;
  o.seeds = 1;
  o.shard_index = kMaxShards - 1;
  o.shard_count = kMaxShards;
  absl::StatusOr<ExploreResult> r = Explore(scenarios, o, registry);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->outcomes.empty());  // one item, which shard 0 runs
}

// A --seeds shard stopped and resumed (ExploreOptions::done, explore
// --resume) gives the outcomes and summary of one uninterrupted run.
TEST(ExploreTest, AShardResumedFromItsFirstRunsEqualsOneRun) {
  const std::vector<Scenario> scenarios = {Load("tp4-ep2-qwen3-h200.yaml"),
                                           Load("tp8-llama3-h200.yaml")};
  const PolicyRegistry registry = MakePolicyRegistry();
  ExploreOptions o;
  o.seeds = 12;
  o.swarm = true;
  o.policy = "local-predicates";  // failures, with summaries and signatures
  o.shard_index = 1;
  o.shard_count = 3;
  o.jobs = 2;
  const absl::StatusOr<ExploreResult> full = Explore(scenarios, o, registry);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_EQ(full->outcomes.size(), 8u);
  EXPECT_FALSE(full->stopped);
  ASSERT_FALSE(full->all_acceptable);
  using Outcome = std::tuple<uint64_t, uint64_t, Verdict, uint64_t, std::string, std::string>;
  const auto flat = [](const std::vector<SeedOutcome>& v) {
    std::vector<Outcome> out;
    for (const SeedOutcome& x : v) {
      out.emplace_back(x.index, x.seed, x.verdict, x.trace_hash, x.summary, x.signature);
    }
    return out;
  };
  for (size_t k : {size_t{0}, size_t{1}, size_t{5}, size_t{8}}) {
    ExploreOptions resumed = o;
    resumed.done.assign(full->outcomes.begin(), full->outcomes.begin() + static_cast<ptrdiff_t>(k));
    ExploreProgress last;
    resumed.progress = [&last](const ExploreProgress& p) { last = p; };
    const absl::StatusOr<ExploreResult> r = Explore(scenarios, resumed, registry);
    ASSERT_TRUE(r.ok()) << r.status();
    // Progress counts the runs kept, and says how many they were.
    EXPECT_EQ(last.done, 8u) << k;
    EXPECT_EQ(last.total, 8u) << k;
    EXPECT_EQ(last.resumed, k);
    EXPECT_EQ(last.failures, static_cast<size_t>(
                                 std::count_if(full->outcomes.begin(), full->outcomes.end(),
                                               [](const SeedOutcome& x) { return !x.acceptable; })))
        << k;
    EXPECT_FALSE(r->stopped) << k;
    EXPECT_EQ(flat(r->outcomes), flat(full->outcomes)) << k;
    EXPECT_EQ(FormatExploreSummary(scenarios, *r, o), FormatExploreSummary(scenarios, *full, o))
        << k;
  }
  // Stopped before another run starts: the runs done before, and it says so.
  std::atomic<bool> stop{true};
  ExploreOptions stopped = o;
  stopped.stop = &stop;
  stopped.done.assign(full->outcomes.begin(), full->outcomes.begin() + 3);
  const absl::StatusOr<ExploreResult> r = Explore(scenarios, stopped, registry);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->stopped);
  EXPECT_EQ(flat(r->outcomes), flat(stopped.done));
  EXPECT_THAT(FormatExploreSummary(scenarios, *r, o),
              HasSubstr("STOPPED after 3 of 8 run(s): the counts below are of those"));
  EXPECT_THAT(FormatExploreMarkdown(scenarios, *r, o),
              HasSubstr("**Stopped** after 3 of 8 run(s): the counts below are of those."));
  EXPECT_THAT(FormatExploreMarkdown(scenarios, *full, o), Not(HasSubstr("Stopped")));
  // Runs done before must be the shard's first.
  ExploreOptions gap = o;
  gap.done = {full->outcomes[0], full->outcomes[2]};
  const absl::StatusOr<ExploreResult> bad = Explore(scenarios, gap, registry);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("run 1 done before is item 7, not the shard's run 1 (item 4)"));
}

// Checkpoints hand over the shard's finished runs from its first, a prefix
// that grows, while runs are still to come.
TEST(ExploreTest, CheckpointsAreGrowingPrefixesOfTheShardsRuns) {
  const std::vector<Scenario> scenarios = {Load("tp8-llama3-h200.yaml")};
  const PolicyRegistry registry = MakePolicyRegistry();
  ExploreOptions o;
  // ~0.6 s here: several of the reporting thread's 100 ms looks.
  o.seeds = lockstep::testing::PropertySeeds(3000);
  o.jobs = 2;
  o.checkpoint_every = std::chrono::milliseconds(0);
  std::vector<std::vector<SeedOutcome>> checkpoints;
  o.checkpoint = [&](std::span<const SeedOutcome> first) {
    checkpoints.emplace_back(first.begin(), first.end());
  };
  const auto start = std::chrono::steady_clock::now();
  const absl::StatusOr<ExploreResult> r = Explore(scenarios, o, registry);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.status();
  size_t last = 0;
  for (const std::vector<SeedOutcome>& c : checkpoints) {
    EXPECT_GT(c.size(), last);
    EXPECT_LT(c.size(), r->outcomes.size());
    last = c.size();
    for (size_t j = 0; j < c.size(); ++j) {
      EXPECT_EQ(c[j].index, r->outcomes[j].index);
      EXPECT_EQ(c[j].trace_hash, r->outcomes[j].trace_hash);
    }
  }
  // The reporting thread looks every 100 ms: a run this long checkpoints (a
  // sanitizer build runs 2 seeds, LOCKSTEP_PROPERTY_SEEDS, and may not).
  if (took >= std::chrono::milliseconds(400)) {
    EXPECT_FALSE(checkpoints.empty());
  }
}

// What the command line sets once (cli/main.cc): a block of a few MiB a run
// frees is kept in the process's heap for the next run, not mapped for it
// and unmapped after it.
TEST(ExploreTest, FreedMemoryStaysInTheProcessForTheNextRun) {
#if !defined(__GLIBC__)
  GTEST_SKIP() << "glibc's own allocator only";
#else
  if (lockstep::testing::kSanitizerBuild) {
    GTEST_SKIP() << "glibc's own allocator only (sanitizers replace it)";
  }
  RetainFreedMemoryBetweenRuns();
  constexpr size_t kBlock = size_t{8} << 20;
  const struct mallinfo2 before = mallinfo2();
  void* block = std::malloc(kBlock);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, before.hblks) << "an 8 MiB block was mapped on its own";
  std::free(block);
  // Freed, it stays in the heap (glibc's default would trim the heap's top).
  EXPECT_GE(mallinfo2().fordblks, kBlock);
#endif
}

TEST(ExploreTest, AMutantsFirstFailingSeedComesWithAReplayCommand) {
  const std::vector<Scenario> scenarios = {Load("tp4-ep2-qwen3-h200.yaml")};
  ExploreOptions o;
  o.seeds = 5;
  o.policy = "no-hybrid-fusion-gate";
  absl::StatusOr<ExploreResult> r = Explore(scenarios, o, MakePolicyRegistry());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->all_acceptable);
  ASSERT_TRUE(r->scenarios[0].first_failure.has_value());
  EXPECT_EQ(r->scenarios[0].first_failure->seed, 1u);
  const std::string text = FormatExploreSummary(scenarios, *r, o);
  EXPECT_THAT(text, HasSubstr("replay: lockstep sim"));
  EXPECT_THAT(text, HasSubstr("--policy no-hybrid-fusion-gate"));
  EXPECT_THAT(FormatExploreMarkdown(scenarios, *r, o), HasSubstr("| `tp4-ep2-qwen3-h200` |"));
}

// Explore's runs keep no decision records until they must explain a failure
// (faults/explore.cc): what a run does, and so its verdict and trace hash,
// must not depend on them.
TEST(ExploreTest, DecisionRecordsChangeNeitherVerdictNorTrace) {
  absl::StatusOr<std::vector<Scenario>> scenarios = LoadScenarios(Topologies() + "/scenarios");
  ASSERT_TRUE(scenarios.ok()) << scenarios.status();
  ASSERT_GT(scenarios->size(), 50u);
  const PolicyRegistry registry = MakePolicyRegistry();
  const uint64_t seeds = lockstep::testing::PropertySeeds(2);
  int failing = 0;
  for (const Scenario& s : *scenarios) {
    for (uint64_t seed = 1; seed <= seeds; ++seed) {
      SimOptions with;
      with.seed = seed;
      with.keep_trace = false;
      SimOptions without = with;
      without.keep_decisions = false;
      absl::StatusOr<SimResult> a = SimulateWithFaults(s, with, registry);
      absl::StatusOr<SimResult> b = SimulateWithFaults(s, without, registry);
      ASSERT_TRUE(a.ok()) << s.name << ": " << a.status();
      ASSERT_TRUE(b.ok()) << s.name << ": " << b.status();
      EXPECT_EQ(a->verdict, b->verdict) << s.name << " seed " << seed;
      EXPECT_EQ(a->trace_hash, b->trace_hash) << s.name << " seed " << seed;
      EXPECT_EQ(a->rank_calls, b->rank_calls) << s.name << " seed " << seed;
      EXPECT_EQ(a->schedule_steps, b->schedule_steps) << s.name << " seed " << seed;
      failing += a->verdict != Verdict::kClean ? 1 : 0;
    }
  }
  // The catalogue's hangs and fail-stops are among them.
  EXPECT_GT(failing, 10);
}

// A failure's summary and signature name its first divergent decision, which
// only the records hold. Explore runs a failing seed again to keep them
// (seed 1 here), and keeps them from the start once more than a tenth of the
// scenario's runs failed (the later seeds, with one job): both ways give
// what a run that kept them gives.
TEST(ExploreTest, AFailuresSignatureComesFromARunThatKeptItsRecords) {
  const std::vector<Scenario> scenarios = {Load("tp8-llama3-h200.yaml")};
  ExploreOptions o;
  o.seeds = 10;
  o.swarm = true;
  o.policy = "local-predicates";
  o.jobs = 1;
  const PolicyRegistry registry = MakePolicyRegistry();
  absl::StatusOr<ExploreResult> r = Explore(scenarios, o, registry);
  ASSERT_TRUE(r.ok()) << r.status();
  int failures = 0, explained = 0;
  for (const SeedOutcome& out : r->outcomes) {
    if (out.acceptable) continue;
    ++failures;
    absl::StatusOr<Scenario> drawn = WithSwarmFaults(scenarios[0], out.seed);
    ASSERT_TRUE(drawn.ok()) << drawn.status();
    SimOptions kept;
    kept.seed = out.seed;
    kept.policy = o.policy;
    kept.keep_trace = false;
    absl::StatusOr<SimResult> direct = SimulateWithFaults(*drawn, kept, registry);
    ASSERT_TRUE(direct.ok()) << direct.status();
    EXPECT_EQ(out.summary, direct->summary) << "seed " << out.seed;
    EXPECT_EQ(out.signature, FailureSignature(*direct)) << "seed " << out.seed;
    EXPECT_EQ(out.trace_hash, direct->trace_hash) << "seed " << out.seed;
    SimOptions bare = kept;
    bare.keep_decisions = false;
    absl::StatusOr<SimResult> unexplained = SimulateWithFaults(*drawn, bare, registry);
    ASSERT_TRUE(unexplained.ok()) << unexplained.status();
    EXPECT_THAT(out.summary, HasSubstr("first divergent decision")) << "seed " << out.seed;
    explained += out.signature != FailureSignature(*unexplained) ? 1 : 0;
  }
  // Local predicates under swarm faults hang most seeds (7 of these 10).
  EXPECT_GE(failures, 5);
  // Without the records the signature would lack the inputs that differed.
  EXPECT_EQ(explained, failures);
}

TEST(ExploreTest, SwarmDrawsAreDeterministicAndApplicable) {
  const Scenario s = Load("tp4-ep2-qwen3-h200.yaml");
  const ParallelLayout layout = *ParallelLayout::Build(s.parallel);
  int nonempty = 0;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    const std::vector<FaultSpec> a = DrawSwarmFaults(s, layout, seed);
    const std::vector<FaultSpec> b = DrawSwarmFaults(s, layout, seed);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].kind, b[i].kind);
      EXPECT_EQ(a[i].ranks, b[i].ranks);
      EXPECT_TRUE(ValidateFault(s, layout, a[i]).ok()) << a[i].kind;
    }
    nonempty += a.empty() ? 0 : 1;
    EXPECT_LE(a.size(), 3u);
  }
  EXPECT_GT(nonempty, 40);
}

TEST(ReplayTest, AReportReplaysToTheSameVerdictAndTraceHash) {
  const Scenario s = Load("faults/tp8-lost-write.yaml");
  const PolicyRegistry registry = MakePolicyRegistry();
  SimOptions o;
  o.seed = 17;
  absl::StatusOr<SimResult> first = SimulateWithFaults(s, o, registry);
  ASSERT_TRUE(first.ok());
  const nlohmann::json report = MakeReport(s, o, *first);
  // What lockstep replay does: the scenario from the report alone.
  absl::StatusOr<Scenario> again =
      ParseScenario(report["scenario"]["yaml"].get<std::string>(), "report", "");
  ASSERT_TRUE(again.ok()) << again.status();
  SimOptions o2;
  o2.seed = report["seed"].get<uint64_t>();
  o2.policy = report["policy"].get<std::string>();
  absl::StatusOr<SimResult> second = SimulateWithFaults(*again, o2, registry);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->verdict, first->verdict);
  EXPECT_EQ(HexHash(second->trace_hash), report["trace_hash"].get<std::string>());
}

TEST(ShrinkTest, ShrunkScenarioIsSmallerAndFailsTheSameWay) {
  const Scenario s = Load("tp8-ep2-deepseek-v3-h200.yaml");
  const PolicyRegistry registry = MakePolicyRegistry();
  SimOptions o;
  o.seed = 4;
  o.policy = "no-hybrid-fusion-gate";
  absl::StatusOr<ShrinkResult> shrunk = Shrink(s, o, registry);
  ASSERT_TRUE(shrunk.ok()) << shrunk.status();
  EXPECT_EQ(shrunk->verdict, Verdict::kWrongPeer);
  EXPECT_LT(shrunk->scenario.parallel.WorldSize(), s.parallel.WorldSize());
  EXPECT_LE(shrunk->scenario.workload.steps, s.workload.steps);
  EXPECT_FALSE(shrunk->reductions.empty());
  // Written as YAML and read back, with the seed it names, it still fails so.
  absl::StatusOr<Scenario> back = ParseScenario(ScenarioToYaml(shrunk->scenario), "shrunk", "");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->expect, Verdict::kWrongPeer);
  SimOptions replay;
  replay.seed = shrunk->seed;
  absl::StatusOr<SimResult> r = SimulateWithFaults(*back, replay, registry);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict, Verdict::kWrongPeer);
}

TEST(ShrinkTest, ShrinkingKeepsOnlyTheFaultThatMatters) {
  Scenario s = Load("faults/tp8-workspace-alloc-failure.yaml");
  FaultSpec harmless;
  harmless.kind = "straggler";
  harmless.ranks = {2};
  s.faults.push_back(harmless);
  SimOptions o;
  o.policy = "init-failure-without-vote";
  absl::StatusOr<ShrinkResult> shrunk = Shrink(s, o, MakePolicyRegistry());
  ASSERT_TRUE(shrunk.ok()) << shrunk.status();
  EXPECT_EQ(shrunk->verdict, Verdict::kHang);
  ASSERT_EQ(shrunk->scenario.faults.size(), 1u);
  EXPECT_EQ(shrunk->scenario.faults[0].kind, "workspace_alloc_failure");
}

TEST(ShrinkTest, RefusesARunThatDidNotFail) {
  const Scenario s = Load("tp8-llama3-h200.yaml");
  absl::StatusOr<ShrinkResult> shrunk = Shrink(s, SimOptions{}, MakePolicyRegistry());
  EXPECT_EQ(shrunk.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(FaultValidationTest, BadFaultsNameTheLineAndWhatIsAccepted) {
  Scenario s = Load("tp8-llama3-h200.yaml");
  const ParallelLayout layout = *ParallelLayout::Build(s.parallel);
  FaultSpec f;
  f.line = 12;
  f.kind = "kernel_lauch_failure";
  EXPECT_THAT(ValidateFault(s, layout, f).message(),
              HasSubstr(":12: faults: unknown fault kind 'kernel_lauch_failure'; did you mean "
                        "'kernel_launch_failure'?"));
  f.kind = "straggler";
  f.params["delay"] = "5";
  EXPECT_THAT(
      ValidateFault(s, layout, f).message(),
      HasSubstr("fault 'straggler' has no parameter 'delay' (it takes: ranks, at_step, delay_us)"));
  f.params.clear();
  f.params["delay_us"] = "soon";
  EXPECT_THAT(ValidateFault(s, layout, f).message(), HasSubstr("expects an integer, got 'soon'"));
  f.params.clear();
  f.kind = "both_moe_groups_tagged";
  EXPECT_THAT(ValidateFault(s, layout, f).message(), HasSubstr("does not apply to this scenario"));
}

TEST(FaultValidationTest, DeclaredFaultsWithoutAPlanAreRefused) {
  const Scenario s = Load("faults/tp8-straggler.yaml");
  PolicyRegistry registry;
  absl::StatusOr<SimResult> r = Simulate(s, SimOptions{}, registry);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("no fault plan"));
}

TEST(PctScheduleTest, LetsOneRankRunFarAheadMuchMoreOftenThanUniformScheduling) {
  // A rank finishing all its work before any other rank starts is an
  // interleaving uniform random scheduling essentially never produces.
  auto ahead = [](const std::string& schedule) {
    int count = 0;
    for (uint64_t seed = 1; seed <= 200; ++seed) {
      absl::StatusOr<std::unique_ptr<SchedulePolicy>> policy = MakeSchedule(schedule, 4, 40, seed);
      Scheduler s(4, seed, *std::move(policy));
      std::vector<int> order;
      for (int r = 0; r < 4; ++r) {
        s.Spawn(
            r,
            [&s, &order, r] {
              for (int i = 0; i < 10; ++i) {
                order.push_back(r);
                s.Yield();
              }
            },
            64 * 1024);
      }
      s.Run();
      count += std::equal(order.begin() + 1, order.begin() + 10, order.begin()) ? 1 : 0;
    }
    return count;
  };
  const int uniform = ahead("random");
  const int pct = ahead("pct:2");
  EXPECT_LE(uniform, 2);
  EXPECT_GE(pct, 40) << "PCT runs the highest-priority rank until a change point";
}

TEST(PctScheduleTest, BadScheduleNamesAreRefused) {
  EXPECT_FALSE(MakeSchedule("pct:0", 4, 10, 1).ok());
  EXPECT_FALSE(MakeSchedule("pct3", 4, 10, 1).ok());
  EXPECT_THAT(MakeSchedule("roundrobin", 4, 10, 1).status().message(),
              HasSubstr("use random, pct or pct:D"));
}

}  // namespace
}  // namespace lockstep::faults
