// Relaxed memory (`memory: relaxed`, docs/SIMULATOR.md): stores reach peers
// late, in pieces and out of order. The reference kernels stay clean — the
// Lamport protocols need no ordering, the custom all-reduce has its release —
// a barrier without the release reads staged input that has not arrived, and
// a run replays by its seed.

#include <memory>
#include <string>

#include "dispatch/decision.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/simulation.h"
#include "tests/property_seeds.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::lockstep::testing::CatalogueScenario;
using ::lockstep::testing::ScenarioFromYaml;
using ::testing::HasSubstr;

// The custom all-reduce's barrier flags without the release its protocol
// declares (kReleaseFlags cleared).
class FlagsWithoutRelease : public DispatchPolicy {
 public:
  std::string_view name() const override { return "flags-without-release"; }

 protected:
  void ConfigureCustomLaunch(const GroupBackends& b, const CallDesc& call,
                             DecisionRecord& r) const override {
    DispatchPolicy::ConfigureCustomLaunch(b, call, r);
    r.kernel_flags = static_cast<uint8_t>(r.kernel_flags & ~kReleaseFlags);
  }
};

SimResult RunRelaxed(const Scenario& s, uint64_t seed, const std::string& schedule = "random",
                     const std::string& policy = "") {
  PolicyRegistry registry;
  EXPECT_TRUE(registry
                  .Register({"flags-without-release", "", "",
                             [] { return std::make_unique<FlagsWithoutRelease>(); }})
                  .ok());
  SimOptions o;
  o.seed = seed;
  o.schedule = schedule;
  o.policy = policy;
  o.keep_trace = false;
  absl::StatusOr<SimResult> r = Simulate(s, o, registry);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimResult{};
}

// World 2: the custom all-reduce beyond 16 tokens (v1's staged protocol:
// v2 pushes every message at world 2), the one-shot Lamport kernel below,
// numeric data (pieces of real elements land separately).
const char* kTp2 = R"(
name: tp2-relaxed
hardware: h200x2
parallel: {tp: 2}
model: {name: dense, hidden: 1024, layers: 2}
dispatch: {fused_backend: true, max_tokens: 16, custom_allreduce_v2: false}
workload: {steps: 3, tokens: [1, 16, 100], data: numeric}
memory: relaxed
)";

TEST(RelaxedMemoryTest, ReferenceKernelsStayCleanWhenStoresArriveLateAndOutOfOrder) {
  // tp8: one-shot (1 token), two-shot (256) and the custom all-reduce (300
  // tokens, and the 3-D embedding) on one node.
  const Scenario tp8 = CatalogueScenario("tp8-relaxed-memory-llama3-h200");
  ASSERT_EQ(tp8.memory, MemoryModel::kRelaxed);
  const Scenario tp2 = ScenarioFromYaml(kTp2);
  const uint64_t seeds = lockstep::testing::PropertySeeds(6);
  for (const Scenario* s : {&tp8, &tp2}) {
    for (const char* schedule : {"random", "pct:3"}) {
      for (uint64_t seed = 1; seed <= seeds; ++seed) {
        const SimResult r = RunRelaxed(*s, seed, schedule);
        EXPECT_EQ(r.verdict, Verdict::kClean)
            << s->name << " " << schedule << " seed " << seed << ": " << r.summary;
        EXPECT_GT(r.relaxed_stores, 0u) << "stores went through the in-flight queue";
      }
    }
  }
}

TEST(RelaxedMemoryTest, ARunReplaysByItsSeed) {
  const Scenario tp8 = CatalogueScenario("tp8-relaxed-memory-llama3-h200");
  const SimResult a = RunRelaxed(tp8, 5);
  const SimResult b = RunRelaxed(tp8, 5);
  EXPECT_EQ(a.trace_hash, b.trace_hash);
  EXPECT_EQ(a.schedule_steps, b.schedule_steps);
  EXPECT_EQ(a.relaxed_stores, b.relaxed_stores);
  Scenario immediate = tp8;
  immediate.memory = MemoryModel::kImmediate;
  const SimResult c = RunRelaxed(immediate, 5);
  EXPECT_EQ(c.verdict, Verdict::kClean) << c.summary;
  EXPECT_EQ(c.relaxed_stores, 0u);
  EXPECT_NE(c.schedule_steps, a.schedule_steps)
      << "late stores keep pollers waiting longer: another interleaving";
}

TEST(RelaxedMemoryTest, WithoutTheReleaseAPeerReadsStagedInputThatHasNotArrived) {
  const Scenario tp2 = ScenarioFromYaml(kTp2);
  int caught = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const SimResult r = RunRelaxed(tp2, seed, "random", "flags-without-release");
    if (!IsSilentFailure(r.verdict)) continue;
    ++caught;
    // The report names the store the read got ahead of.
    EXPECT_THAT(r.summary, HasSubstr("relaxed memory: rank "));
    EXPECT_THAT(r.summary, HasSubstr("'s staged input (custom all-reduce "));
    EXPECT_THAT(r.summary, HasSubstr("reached it"));
    EXPECT_TRUE(r.details.contains("late_store")) << r.details.dump();
  }
  EXPECT_GE(caught, 3) << "the flag overtakes the staged data on most seeds";
  // With every store visible at once the same policy is clean: only relaxed
  // memory exposes it.
  Scenario immediate = tp2;
  immediate.memory = MemoryModel::kImmediate;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const SimResult r = RunRelaxed(immediate, seed, "random", "flags-without-release");
    EXPECT_EQ(r.verdict, Verdict::kClean) << "seed " << seed << ": " << r.summary;
  }
}

// v2's 2shot_pull stores each rank's reduced shard into every peer's
// workspace and releases those stores at its second barrier phase; without
// the release, a rank copies its workspace out before a peer's shard landed.
TEST(RelaxedMemoryTest, WithoutTheReleaseV2CopiesOutBeforeAPeersShardLanded) {
  const Scenario tp8 = CatalogueScenario("tp8-relaxed-memory-llama3-h200");
  int caught = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const SimResult r = RunRelaxed(tp8, seed, "random", "flags-without-release");
    if (!IsSilentFailure(r.verdict)) continue;
    ++caught;
    EXPECT_THAT(r.summary, HasSubstr("of its workspace out (custom all-reduce "));
    EXPECT_THAT(r.summary, HasSubstr("store of its reduced shard"));
  }
  EXPECT_GE(caught, 3) << "the arrival overtakes the shard stores on most seeds";
}

}  // namespace
}  // namespace lockstep
