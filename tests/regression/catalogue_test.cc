// The catalogue as a regression gate: every scenario of topologies/scenarios
// gives the verdict it declares under the reference design, on every seed;
// the catalogue covers the hardware, models, layouts and token ranges serving
// teams run; the PCIe box keeps custom and fused all-reduce to pairs.

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dispatch/group_layout.h"
#include "dispatch/parallel_config.h"
#include "faults/explore.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/property_seeds.h"
#include "tests/regression/regression_util.h"

namespace lockstep::regression {
namespace {

using ::testing::HasSubstr;

class CatalogueScenarioTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CatalogueScenarioTest, GivesItsExpectUnderTheReferenceOnEverySeed) {
  absl::StatusOr<Scenario> s = LoadCatalogueScenario(GetParam());
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE(s->expect.has_value()) << GetParam() << ": every catalogue scenario declares expect";
  // The reference design may mask a fault or stop loudly, never fail silently.
  ASSERT_FALSE(IsSilentFailure(*s->expect))
      << GetParam() << " expects " << VerdictName(*s->expect) << " of the reference";
  for (uint64_t seed = 1; seed <= testing::PropertySeeds(kSeeds); ++seed) {
    absl::StatusOr<SimResult> r = RunScenario(*s, "reference", seed);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->verdict, *s->expect)
        << GetParam() << " seed " << seed << ": " << r->summary
        << "\n  replay: " << ReplayCommand(GetParam(), "reference", seed);
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, CatalogueScenarioTest,
                         ::testing::ValuesIn(CatalogueScenarioNames()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return TestNameOf(param.param);
                         });

TEST(CatalogueTest, ScenarioNamesAreUniqueAndFaultVariantsDeclareTheirFaults) {
  std::set<std::string> names;
  for (const std::string& file : CatalogueScenarioNames()) {
    absl::StatusOr<Scenario> s = LoadCatalogueScenario(file);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(names.insert(s->name).second) << "two scenarios are named " << s->name;
    EXPECT_FALSE(s->description.empty()) << file << " says what it guards";
    if (file.starts_with("faults/")) {
      EXPECT_FALSE(s->faults.empty()) << file << " is a fault variant without faults";
      EXPECT_TRUE(s->name.starts_with("fault-")) << file << " is named " << s->name;
    }
  }
  EXPECT_GE(names.size(), 90u);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CatalogueTest, EveryHardwareFileSaysWhereItsFiguresComeFrom) {
  for (const char* name :
       {"h200x8", "h200x2", "b200x8", "gb200-nvl72", "two-nvl72-racks", "pcie-8gpu"}) {
    const std::string path = TopologiesDir() + "/hardware/" + name + ".yaml";
    absl::StatusOr<HardwareSpec> hw = LoadHardwareFile(path);
    ASSERT_TRUE(hw.ok()) << hw.status();
    EXPECT_EQ(hw->name, name);
    EXPECT_THAT(ReadFile(path), HasSubstr("\nsource: ")) << path;
  }
  for (const char* name : {"deepseek-v3", "deepseek-v4", "qwen3-30b-a3b", "llama-3-70b"}) {
    const std::string path = TopologiesDir() + "/models/" + name + ".yaml";
    absl::StatusOr<ModelSpec> m = LoadModelFile(path);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_THAT(ReadFile(path), HasSubstr("\nsource: ")) << path;
  }
}

TEST(CatalogueTest, HardwareShapesMatchTheMachines) {
  auto load = [](const char* name) {
    absl::StatusOr<HardwareSpec> hw =
        LoadHardwareFile(TopologiesDir() + "/hardware/" + name + ".yaml");
    EXPECT_TRUE(hw.ok()) << hw.status();
    return hw.ok() ? *hw : HardwareSpec{};
  };
  const HardwareSpec b200 = load("b200x8");
  EXPECT_EQ(b200.max_gpus, 8);
  EXPECT_TRUE(b200.nvlink);
  EXPECT_GT(b200.intra_node.bandwidth_gbps, load("h200x8").intra_node.bandwidth_gbps)
      << "NVLink 5 is twice NVLink 4";
  const HardwareSpec racks = load("two-nvl72-racks");
  EXPECT_EQ(racks.max_gpus, 144);
  EXPECT_EQ(racks.gpus_per_node * racks.nodes_per_domain, 72) << "one NVLink domain per rack";
  EXPECT_LT(racks.network.bandwidth_gbps, racks.intra_domain.bandwidth_gbps);
  const HardwareSpec pcie = load("pcie-8gpu");
  EXPECT_FALSE(pcie.nvlink);
  EXPECT_EQ(pcie.max_gpus, 8);
}

// What the issue asks the catalogue to hold, as predicates over scenarios.
struct Requirement {
  const char* what;
  std::function<bool(const Scenario&, const ParallelWidths&)> holds;
  bool with_faults_too;  // some fault variant of the same shape exists
};

bool OnlyTp(const ParallelConfig& p) {
  return p.ep == 1 && p.dp == 1 && p.pp == 1 && p.moe_dp == 1 && p.attn_cp == 1;
}

TEST(CatalogueTest, CoversTheLayoutsHardwareModelsAndTokenRangesOfTheIssue) {
  absl::StatusOr<std::vector<Scenario>> all = faults::LoadScenarios(ScenariosDir());
  ASSERT_TRUE(all.ok()) << all.status();
  const std::vector<Requirement> requirements = {
      {"tp8 on H200",
       [](const Scenario& s, const ParallelWidths&) {
         return s.parallel.tp == 8 && OnlyTp(s.parallel) && s.hardware.name == "h200x8";
       },
       true},
      {"tp8 on B200",
       [](const Scenario& s, const ParallelWidths&) {
         return s.parallel.tp == 8 && s.hardware.name == "b200x8";
       },
       true},
      {"tp2 on H200x2",
       [](const Scenario& s, const ParallelWidths&) { return s.hardware.name == "h200x2"; }, true},
      {"tp16 across NVL72 trays",
       [](const Scenario& s, const ParallelWidths&) {
         return s.parallel.tp == 16 && s.hardware.name == "gb200-nvl72";
       },
       true},
      {"tp32 across NVL72 trays",
       [](const Scenario& s, const ParallelWidths&) {
         return s.parallel.tp == 32 && s.hardware.name == "gb200-nvl72";
       },
       true},
      {"two NVL72 racks",
       [](const Scenario& s, const ParallelWidths& w) {
         return s.hardware.name == "two-nvl72-racks" && w.world > 72;
       },
       true},
      {"tp4 ep2",
       [](const Scenario& s, const ParallelWidths& w) {
         return s.parallel.tp == 4 && w.moe_ep == 2 && w.moe_tp == 2 && w.pp == 1;
       },
       true},
      {"tp8 ep2 (moe_tp 4)",
       [](const Scenario& s, const ParallelWidths& w) {
         return s.parallel.tp == 8 && w.moe_ep == 2 && w.moe_tp == 4 && w.attn_dp == 1 && w.pp == 1;
       },
       true},
      {"tp8 ep4",
       [](const Scenario& s, const ParallelWidths& w) {
         return s.parallel.tp == 8 && w.moe_ep == 4 && w.moe_dp == 1 && w.attn_dp == 1;
       },
       true},
      {"tp8 ep8",
       [](const Scenario& s, const ParallelWidths& w) {
         return s.parallel.tp == 8 && w.moe_ep == 8 && w.attn_dp == 1;
       },
       true},
      {"moe_dp > 1", [](const Scenario&, const ParallelWidths& w) { return w.moe_dp > 1; }, true},
      {"DP attention dp8 with EP",
       [](const Scenario&, const ParallelWidths& w) { return w.attn_dp == 8 && w.moe_ep > 1; },
       true},
      {"DP attention dp8 without EP",
       [](const Scenario&, const ParallelWidths& w) { return w.attn_dp == 8 && w.moe_ep == 1; },
       true},
      {"DP attention dp2 with EP",
       [](const Scenario&, const ParallelWidths& w) { return w.attn_dp == 2 && w.moe_ep > 1; },
       true},
      {"DP attention dp2 without EP",
       [](const Scenario&, const ParallelWidths& w) { return w.attn_dp == 2 && w.moe_ep == 1; },
       true},
      {"DP attention with hybrid EP+TP",
       [](const Scenario&, const ParallelWidths& w) { return w.attn_dp > 1 && w.IsHybridEpTp(); },
       true},
      {"pp2 x hybrid EP+TP",
       [](const Scenario&, const ParallelWidths& w) { return w.pp == 2 && w.IsHybridEpTp(); },
       true},
      {"the PCIe box beyond world 2",
       [](const Scenario& s, const ParallelWidths& w) { return !s.hardware.nvlink && w.tp > 2; },
       true},
      {"the PCIe box at world 2",
       [](const Scenario& s, const ParallelWidths& w) { return !s.hardware.nvlink && w.tp == 2; },
       true},
      {"DeepSeek-V4 on GB200 TP8",
       [](const Scenario& s, const ParallelWidths&) {
         return s.model.name == "deepseek-v4" && !s.model.ar_norm_fusion &&
                s.hardware.name == "gb200-nvl72" && s.parallel.tp == 8;
       },
       true},
      {"Llama-3-70B",
       [](const Scenario& s, const ParallelWidths&) { return s.model.name == "llama-3-70b"; },
       true},
      {"Qwen3-30B-A3B",
       [](const Scenario& s, const ParallelWidths&) { return s.model.name == "qwen3-30b-a3b"; },
       true},
      {"DeepSeek-V3",
       [](const Scenario& s, const ParallelWidths&) { return s.model.name == "deepseek-v3"; },
       true},
      {"decode (1-16 tokens)",
       [](const Scenario& s, const ParallelWidths&) {
         return std::any_of(s.workload.tokens.begin(), s.workload.tokens.end(),
                            [](int64_t t) { return t >= 1 && t <= 16; });
       },
       true},
      {"prefill at the workspace capacity",
       [](const Scenario& s, const ParallelWidths&) {
         return std::any_of(s.workload.tokens.begin(), s.workload.tokens.end(),
                            [&](int64_t t) { return t == s.dispatch.max_tokens; });
       },
       true},
      {"tokens beyond the workspace capacity",
       [](const Scenario& s, const ParallelWidths&) {
         return std::any_of(s.workload.tokens.begin(), s.workload.tokens.end(),
                            [&](int64_t t) { return t > s.dispatch.max_tokens; });
       },
       true},
  };
  for (const Requirement& req : requirements) {
    int layouts = 0, with_faults = 0;
    for (const Scenario& s : *all) {
      const ParallelWidths w = DeriveWidths(s.parallel);
      if (!req.holds(s, w)) continue;
      ++(s.faults.empty() ? layouts : with_faults);
    }
    EXPECT_GT(layouts, 0) << "no fault-free catalogue scenario for " << req.what;
    if (req.with_faults_too) {
      EXPECT_GT(with_faults, 0) << "no fault variant for " << req.what;
    }
  }
}

// The backends a run used, per group size.
struct BackendUse {
  std::set<std::pair<int, BackendKind>> by_group_size;
  bool Used(int group_size, BackendKind kind) const {
    return by_group_size.count({group_size, kind}) > 0;
  }
};

BackendUse BackendsOf(const std::string& name) {
  BackendUse use;
  absl::StatusOr<Scenario> s = LoadCatalogueScenario(name);
  EXPECT_TRUE(s.ok()) << s.status();
  if (!s.ok()) return use;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(s->parallel);
  EXPECT_TRUE(layout.ok());
  absl::StatusOr<SimResult> r = RunScenario(*s, "reference", 1, /*keep_trace=*/true);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok() || !layout.ok()) return use;
  EXPECT_EQ(r->verdict, Verdict::kClean) << r->summary;
  for (const TraceEvent& e : r->trace_events) {
    use.by_group_size.insert({layout->GroupSize(e.group), e.backend});
  }
  return use;
}

TEST(PcieBoxTest, CustomAndFusedAllReduceAreUnavailableBeyondWorldTwo) {
  const BackendUse tp8 = BackendsOf("tp8-llama3-pcie");
  EXPECT_TRUE(tp8.Used(8, BackendKind::kNccl));
  EXPECT_FALSE(tp8.Used(8, BackendKind::kFused)) << "the fused kernel cannot map 8 PCIe peers";
  EXPECT_FALSE(tp8.Used(8, BackendKind::kCustom)) << "custom all-reduce needs NVLink beyond 2";
  const BackendUse hybrid = BackendsOf("tp4-ep2-qwen3-pcie");
  EXPECT_TRUE(hybrid.Used(4, BackendKind::kNccl));
  EXPECT_FALSE(hybrid.Used(4, BackendKind::kFused));
  EXPECT_FALSE(hybrid.Used(4, BackendKind::kCustom));
}

TEST(PcieBoxTest, APairOfPcieGpusKeepsTheLegacyCustomAllReduceAndNoFusedKernel) {
  // SM89 (L40S): SGLang 0.5.23 configures no fused backend below SM90; the
  // pair has no NVLink, so CustomAllReduceV2 refuses it and the legacy v1,
  // which admits two PCIe peers, serves it (custom_all_reduce.py:387-398).
  const BackendUse tp2 = BackendsOf("tp2-qwen3-pcie");
  EXPECT_FALSE(tp2.Used(2, BackendKind::kFused));
  EXPECT_TRUE(tp2.Used(2, BackendKind::kCustom));
}

TEST(TwoRacksTest, AStageThatStraddlesTheRacksFallsBackToNcclAlone) {
  absl::StatusOr<Scenario> s = LoadCatalogueScenario("pp9-tp16-deepseek-v3-2xnvl72");
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<SimResult> r = RunScenario(*s, "reference", 1, /*keep_trace=*/true);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->verdict, Verdict::kClean) << r->summary;
  // Ranks 64-79 (stage 4) span GPUs 64-71 of the first rack and 72-79 of the
  // second: no NVLink between them, so no fused or custom all-reduce.
  std::set<BackendKind> straddling, others;
  for (const TraceEvent& e : r->trace_events) {
    (e.rank >= 64 && e.rank < 80 ? straddling : others).insert(e.backend);
  }
  EXPECT_EQ(straddling, std::set<BackendKind>{BackendKind::kNccl});
  EXPECT_TRUE(others.count(BackendKind::kFused) > 0) << "stages inside one rack keep MNNVL";
}

}  // namespace
}  // namespace lockstep::regression
