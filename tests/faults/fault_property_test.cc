// The property lockstep exists to show: under the reference policy, every
// fault kind gives the outcome it declares (clean where the design masks it,
// fail_stop where it can only surface it) on every catalogue layout it applies
// to, over many seeds and schedules; and swarm combinations never give a
// silent failure.

#include <filesystem>

#include "faults/explore.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property_seeds.h"

namespace lockstep::faults {
namespace {

std::string Topologies() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

// The catalogue's fault-free scenarios: the layouts faults are injected into.
std::vector<Scenario> BaseScenarios() {
  absl::StatusOr<std::vector<Scenario>> all = LoadScenarios(Topologies() + "/scenarios");
  EXPECT_TRUE(all.ok()) << all.status();
  std::vector<Scenario> base;
  for (Scenario& s : *all) {
    if (s.faults.empty()) base.push_back(std::move(s));
  }
  return base;
}

class FaultKindTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FaultKindTest, ReferenceGivesTheDeclaredOutcomeOnEveryApplicableLayout) {
  const FaultKindInfo* kind = FindFaultKind(GetParam());
  ASSERT_NE(kind, nullptr);
  const PolicyRegistry registry = MakePolicyRegistry();
  int applicable = 0, fired = 0;
  for (const Scenario& base : BaseScenarios()) {
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(base.parallel);
    ASSERT_TRUE(layout.ok());
    if (!kind->applies(base, *layout)) continue;
    ++applicable;
    // Target ranks spread over the world, over seeds and both schedules.
    // Where LOCKSTEP_PROPERTY_SEEDS caps the run (the sanitizer stage), two
    // target ranks, each with one of the seeds in turn: two runs a layout
    // that still cover both schedules (the full run: 4 ranks x 6 seeds).
    const uint64_t seeds = lockstep::testing::PropertySeeds(6);
    const bool capped = seeds < 6;
    const int targets = capped ? 2 : 4;
    const int stride = std::max(1, layout->world_size() / targets);
    uint64_t target = 0;
    for (int rank = 0; rank < layout->world_size(); rank += stride, ++target) {
      for (uint64_t seed = 1; seed <= seeds; ++seed) {
        if (capped && seed != target % seeds + 1) continue;
        Scenario s = base;
        s.expect.reset();
        FaultSpec f;
        f.kind = std::string(kind->name);
        f.ranks = {rank};
        s.faults = {f};
        SimOptions o;
        o.seed = seed;
        o.keep_trace = false;
        o.schedule = seed % 2 == 0 ? "pct:3" : "random";
        absl::StatusOr<SimResult> r = SimulateWithFaults(s, o, registry);
        ASSERT_TRUE(r.ok()) << r.status();
        if (FaultOutcome(f, s) == Verdict::kClean) {
          EXPECT_EQ(r->verdict, Verdict::kClean)
              << base.name << " rank " << rank << " seed " << seed << ": " << r->summary;
        } else {
          EXPECT_THAT(r->verdict, ::testing::AnyOf(Verdict::kFailStop, Verdict::kClean))
              << base.name << " rank " << rank << " seed " << seed << ": " << r->summary;
          fired += r->verdict == Verdict::kFailStop ? 1 : 0;
        }
      }
    }
  }
  EXPECT_GT(applicable, 0) << "no catalogue layout exercises " << kind->name;
  if (kind->outcome == Verdict::kFailStop) {
    EXPECT_GT(fired, 0) << kind->name << " never fired: the test proves nothing";
  }
}

std::vector<std::string> KindNames() {
  std::vector<std::string> names;
  for (const FaultKindInfo& k : AllFaultKinds()) names.emplace_back(k.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllKinds, FaultKindTest, ::testing::ValuesIn(KindNames()),
                         [](const auto& param_info) { return param_info.param; });

TEST(DeclaredFaultScenariosTest, EveryFaultExampleGivesItsExpectedVerdict) {
  absl::StatusOr<std::vector<Scenario>> all = LoadScenarios(Topologies() + "/scenarios/faults");
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_GE(all->size(), AllFaultKinds().size()) << "one example per fault kind at least";
  std::set<std::string> kinds_covered;
  const PolicyRegistry registry = MakePolicyRegistry();
  for (const Scenario& s : *all) {
    ASSERT_TRUE(s.expect.has_value()) << s.path;
    for (const FaultSpec& f : s.faults) kinds_covered.insert(f.kind);
    for (uint64_t seed = 1; seed <= lockstep::testing::PropertySeeds(3); ++seed) {
      SimOptions o;
      o.seed = seed;
      o.keep_trace = false;
      absl::StatusOr<SimResult> r = SimulateWithFaults(s, o, registry);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->verdict, *s.expect) << s.path << " seed " << seed << ": " << r->summary;
    }
  }
  for (const FaultKindInfo& k : AllFaultKinds()) {
    EXPECT_TRUE(kinds_covered.count(std::string(k.name))) << k.name << " has no example scenario";
  }
}

}  // namespace
}  // namespace lockstep::faults
