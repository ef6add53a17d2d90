#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/budget.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/scratch_dir.h"

namespace lockstep::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunLockstep(std::vector<std::string> args) {
  args.insert(args.begin(), "lockstep");
  std::ostringstream out, err;
  const int code = Main(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(LayoutCommandTest, HybridLayoutShowsBothMoeGroupsAndTheMergedPlan) {
  const Result r = RunLockstep({"layout", "--tp", "4", "--ep", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("moe_ep   roles moe_ep"));
  // SGLang 0.5.23 tags MOE_EP (parallel_state.py:2378) but builds the MoE
  // workspace on TP, the merged reduction group (docs/FIDELITY.md).
  EXPECT_THAT(r.out, HasSubstr("[0,2] [1,3]  <- workspace moe"));
  EXPECT_THAT(r.out, HasSubstr("moe      on tp (4 ranks each), the merged post-experts reduction"));
  EXPECT_THAT(r.out, HasSubstr("[0,1] [2,3]\n"));
  EXPECT_THAT(r.out, HasSubstr("hybrid EP+TP: yes"));
  EXPECT_THAT(r.out, HasSubstr("MoE:   all-reduce over tp (EP and MoE-TP merged)"));
}

TEST(LayoutCommandTest, VersusNamesWhereTheTwoPoliciesDecideDifferently) {
  const Result r = RunLockstep({"layout", "--tp", "4", "--ep", "2", "--versus", "sglang-pr30700"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("where reference (-) and sglang-pr30700 (+) differ:"));
  EXPECT_THAT(r.out, HasSubstr("- policy: reference"));
  EXPECT_THAT(r.out, HasSubstr("+ policy: sglang-pr30700"));
  // The MoE workspace: TP under 0.5.23, MOE_EP under PR #30700.
  EXPECT_THAT(r.out, HasSubstr("-   moe      on tp"));
  EXPECT_THAT(r.out, HasSubstr("+   moe      on moe_ep"));
  const Result same = RunLockstep({"layout", "--tp", "4", "--versus", "reference"});
  ASSERT_EQ(same.code, kExitOk) << same.err;
  EXPECT_THAT(same.out, HasSubstr("reference and reference decide the same on this layout"));
}

TEST(SimCommandTest, VersusNamesTheFirstCallThePoliciesDecideDifferently) {
  const std::string scenario =
      std::string(LOCKSTEP_SOURCE_DIR) + "/topologies/scenarios/tp8-llama3-h200.yaml";
  const Result r = RunLockstep({"sim", scenario, "--versus", "sglang-pr30700"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("policy reference"));
  EXPECT_THAT(r.out, HasSubstr("policy sglang-pr30700"));
  // PR #30700 reduced a 3-D embedding, which the fused kernel refuses.
  EXPECT_THAT(r.out, HasSubstr("first call decided differently: rank 0 call 0: reference chose "
                               "fused/one_shot at step 0 embedding, sglang-pr30700 chose custom"));
  const Result same = RunLockstep({"sim", scenario, "--versus", "reference"});
  ASSERT_EQ(same.code, kExitOk) << same.err;
  EXPECT_THAT(same.out, HasSubstr("reference and reference decided every call alike"));
}

TEST(LayoutCommandTest, ALayoutSglangRefusesWhenItBuildsTheMoeIsRefused) {
  const Result r =
      RunLockstep({"layout", "--tp", "4", "--attn-dp", "2", "--attn-cp", "2", "--moe-dp", "2"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("SGLang 0.5.23 refuses it when it builds the model"));
}

TEST(LayoutCommandTest, JsonListsEverySubgroup) {
  const Result r = RunLockstep({"layout", "--tp=8", "--ep=2", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["widths"]["moe_tp"], 4);
  EXPECT_EQ(j["moe_workspace_group"], "tp");  // the merged post-experts reduction group
  bool found = false;
  for (const auto& g : j["groups"]) {
    if (g["name"] == "moe_ep") {
      found = true;
      EXPECT_EQ(g["subgroups"], nlohmann::json::parse("[[0,4],[1,5],[2,6],[3,7]]"));
      EXPECT_EQ(g["workspace"], "moe");
    }
  }
  EXPECT_TRUE(found);
}

TEST(LayoutCommandTest, InvalidLayoutExitsTwoWithTheRule) {
  const Result r = RunLockstep({"layout", "--tp", "6", "--ep", "4"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("tp=6 is not ep*moe_dp*moe_tp for ep=4"));
  EXPECT_THAT(r.out, Not(HasSubstr("groups:")));
}

TEST(LayoutCommandTest, MisspelledFlagGetsASuggestion) {
  const Result r = RunLockstep({"layout", "--tpp", "4"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("unknown flag --tpp for 'lockstep layout'; did you mean 'tp'?"));
}

TEST(LayoutCommandTest, NonNumericValueIsRejected) {
  const Result r = RunLockstep({"layout", "--tp", "four"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--tp expects an integer, got 'four'"));
}

TEST(LayoutCommandTest, UnknownPolicyListsKnownOnes) {
  const Result r = RunLockstep({"layout", "--tp", "4", "--policy", "nope"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("known policies: reference"));
}

std::string Catalogue(const std::string& name) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/topologies/scenarios/" + name + ".yaml";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SimCommandTest, HybridScenarioIsCleanAndExitsZero) {
  const Result r = RunLockstep({"sim", Catalogue("tp4-ep2-qwen3-h200"), "--seed", "3"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("verdict: clean (expected clean)"));
  EXPECT_THAT(r.out, HasSubstr("trace hash 0x"));
}

TEST(SimCommandTest, WritesAReplayableReportATraceAndNoDotWithoutAHang) {
  const std::string dir = lockstep::testing::ScratchDir();
  const std::string report = dir + "/report.json", trace = dir + "/trace.json",
                    dot = dir + "/graph.dot";
  std::remove(dot.c_str());
  const Result r = RunLockstep(
      {"sim", Catalogue("tp8-llama3-h200"), "--report", report, "--trace", trace, "--dot", dot});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const nlohmann::json j = nlohmann::json::parse(ReadAll(report));
  EXPECT_EQ(j["verdict"], "clean");
  EXPECT_EQ(j["seed"], 1);
  EXPECT_EQ(j["policy"], "reference");
  EXPECT_THAT(j["scenario"]["yaml"].get<std::string>(), HasSubstr("gpus_per_node: 8"));
  EXPECT_EQ(j["trace_hash"].get<std::string>().size(), 18u);
  EXPECT_EQ(j["lockstep"]["build"], std::string(ThisBuild()));
  const nlohmann::json t = nlohmann::json::parse(ReadAll(trace));
  EXPECT_GT(t["traceEvents"].size(), 100u);
  EXPECT_TRUE(ReadAll(dot).empty());
}

TEST(SimCommandTest, JsonOutputIsTheReport) {
  const Result r = RunLockstep({"sim", Catalogue("tp4-ep2-qwen3-h200"), "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["verdict"], "clean");
}

TEST(SimCommandTest, BadScenarioExitsTwoNamingFileAndLine) {
  const std::string path = lockstep::testing::ScratchDir() + "/bad.yaml";
  std::ofstream(path) << "name: x\nhardware: h200x8\nparallel: {tp: 2}\nmodell: llama-3-70b\n";
  const Result r =
      RunLockstep({"sim", path, "--catalogue", std::string(LOCKSTEP_SOURCE_DIR) + "/topologies"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("bad.yaml:4: modell: unknown key; did you mean 'model'?"));
}

TEST(SimCommandTest, MissingScenarioArgumentIsUsage) {
  const Result r = RunLockstep({"sim"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("needs SCENARIO"));
}

TEST(SimCommandTest, UnexpectedVerdictExitsOne) {
  const std::string path = lockstep::testing::ScratchDir() + "/expect_hang.yaml";
  std::ofstream(path) << "name: x\nhardware: h200x8\nparallel: {tp: 2}\nmodel: llama-3-70b\n"
                         "workload: {layers: 1}\nexpect: hang\n";
  const Result r =
      RunLockstep({"sim", path, "--catalogue", std::string(LOCKSTEP_SOURCE_DIR) + "/topologies"});
  EXPECT_EQ(r.code, kExitUnexpected);
  EXPECT_THAT(r.out, HasSubstr("verdict: clean (expected hang - NOT AS EXPECTED)"));
}

TEST(BudgetTest, MaxMemoryTakesBinaryUnitsOrUnlimited) {
  EXPECT_EQ(ResolveMemoryBudget("512M")->bytes, uint64_t{512} << 20);
  EXPECT_EQ(ResolveMemoryBudget("8GiB")->bytes, uint64_t{8} << 30);
  EXPECT_EQ(ResolveMemoryBudget("1.5g")->bytes, uint64_t{3} << 29);
  EXPECT_EQ(ResolveMemoryBudget("100B")->bytes, 100u);
  EXPECT_EQ(ResolveMemoryBudget("unlimited")->bytes, ~uint64_t{0});
  for (const char* bad : {"4096", "8X", "G", "-1G", "1e3G", "99999999999T"}) {
    EXPECT_THAT(ResolveMemoryBudget(bad).status().message(), HasSubstr("--max-memory expects"))
        << bad;
  }
  EXPECT_GT(ResolveMemoryBudget("")->bytes, 0u);  // the machine's default
}

TEST(BudgetTest, ARefusalGivesTheEstimateAndTheKnob) {
  MemoryEstimate need;
  need.parts = {{"fused workspaces", uint64_t{3} << 30}};
  need.total = uint64_t{3} << 30;
  const absl::Status s = CheckMemory("w.yaml", need, 1, 0, "", *ResolveMemoryBudget("1G"));
  EXPECT_THAT(s.message(), HasSubstr("w.yaml: the run needs about 3.0 GiB (fused workspaces "
                                     "3.0 GiB) of memory, more than the budget of 1.0 GiB "
                                     "(--max-memory 1G)"));
  EXPECT_TRUE(CheckMemory("w.yaml", need, 1, 0, "", *ResolveMemoryBudget("4G")).ok());
  EXPECT_EQ(RunsThatFit(need, 8, 0, *ResolveMemoryBudget("10G")), 3u);
}

TEST(MainTest, NonUtf8ArgumentsAreRefused) {
  const Result r = RunLockstep({"sim", "x\xff.yaml"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("SCENARIO: 'x\\xff.yaml' is not valid UTF-8 (byte 1)"));
}

TEST(MainTest, UnknownCommandSuggestsTheClosestVerb) {
  const Result r = RunLockstep({"layuot"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("did you mean 'layout'?"));
}

TEST(MainTest, HelpListsCommandsAndExitsZero) {
  const Result r = RunLockstep({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("layout"));
  EXPECT_THAT(r.out, HasSubstr("3 internal error"));
  EXPECT_THAT(r.out, HasSubstr("lockstep --version"));
}

TEST(MainTest, AnInternalErrorGivesACommandThatPastesBack) {
  std::ostringstream err;
  const std::vector<std::string> argv = {"lockstep", "sim", "it's here.yaml", "a\x1b[2Jb", ""};
  EXPECT_EQ(InternalError(argv, err, "what went wrong", false), kExitInternal);
  EXPECT_THAT(err.str(), HasSubstr("lockstep: internal error: what went wrong\n"));
  EXPECT_THAT(err.str(),
              HasSubstr(absl::StrCat("this build, lockstep ", std::string(ThisBuild()))));
  EXPECT_THAT(err.str(), HasSubstr("\n  lockstep sim 'it'\\''s here.yaml' $'a\\x1b[2Jb' ''\n"));
}

TEST(MainTest, VersionNamesTheBuild) {
  // The project version, then the revision: a clean checkout's, a modified
  // one's with the digest of its changes, or none outside a git checkout
  // (cmake/LockstepBuildStamp.cmake).
  const std::string build(ThisBuild());
  EXPECT_THAT(build, ::testing::MatchesRegex(
                         "[0-9]+\\.[0-9]+\\.[0-9]+ \\((git [0-9a-f]+(, modified( [0-9a-f]+)?)?|no "
                         "git revision)\\)"));
  for (const char* flag : {"--version", "version"}) {
    const Result r = RunLockstep({flag});
    EXPECT_EQ(r.code, kExitOk);
    EXPECT_EQ(r.out, "lockstep " + build + "\n");
    EXPECT_EQ(r.err, "");
  }
}

}  // namespace
}  // namespace lockstep::cli
