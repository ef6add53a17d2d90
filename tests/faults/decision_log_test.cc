// Decision logs (sim/report/decision_log.h, docs/DECISION_LOG.md): the
// simulator writes one per rank, check-log reads them back and names the first
// call a group's members decided differently — silent on a reference run,
// loud under a mutant and on hand-made logs with an injected divergence.

#include "sim/report/decision_log.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scratch_dir.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::testing::HasSubstr;

// The simulator's logs of `scenario` under `policy`, as text per rank.
std::vector<RankDecisionLog> SimulatedLogs(const std::string& scenario, const std::string& policy) {
  static const PolicyRegistry* const registry = new PolicyRegistry(faults::MakePolicyRegistry());
  SimOptions o;
  o.policy = policy;
  o.keep_decision_log = true;
  absl::StatusOr<SimResult> r =
      faults::SimulateWithFaults(testing::CatalogueScenario(scenario), o, *registry);
  EXPECT_TRUE(r.ok()) << r.status();
  std::vector<RankDecisionLog> logs;
  if (!r.ok()) return logs;
  for (size_t rank = 0; rank < r->decision_log.size(); ++rank) {
    std::string text;
    for (const nlohmann::json& line : r->decision_log[rank]) text += line.dump() + "\n";
    absl::StatusOr<RankDecisionLog> log =
        ParseDecisionLog(text, DecisionLogFileName(static_cast<int>(rank)));
    EXPECT_TRUE(log.ok()) << log.status();
    if (log.ok()) logs.push_back(*std::move(log));
  }
  return logs;
}

TEST(DecisionLogTest, AReferenceRunsLogsAgree) {
  const std::vector<RankDecisionLog> logs = SimulatedLogs("tp4-ep2-qwen3-h200", "reference");
  ASSERT_EQ(logs.size(), 4u);
  EXPECT_EQ(logs[0].source, "sim");
  ASSERT_FALSE(logs[0].calls.empty());
  // Every predicate the decision evaluated is an input, by name.
  const nlohmann::json& inputs = logs[0].calls.front().decision["inputs"];
  EXPECT_TRUE(inputs.contains("workspace_initialized"));
  EXPECT_TRUE(inputs.contains("workspace_peers"));
  absl::StatusOr<DecisionLogCheck> check = CheckDecisionLogs(logs);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_FALSE(check->diverged) << check->summary;
  EXPECT_THAT(check->summary, HasSubstr("every group's members decided alike"));
}

TEST(DecisionLogTest, LogsWrittenUnderAMutantNameTheCallAndTheInput) {
  // capacity-from-local-view: rank 14 reads its own autotuner's capacity.
  const std::vector<RankDecisionLog> logs =
      SimulatedLogs("faults/tp16-gb200-capacity-view", "capacity-from-local-view");
  ASSERT_EQ(logs.size(), 16u);
  absl::StatusOr<DecisionLogCheck> check = CheckDecisionLogs(logs);
  ASSERT_TRUE(check.ok()) << check.status();
  ASSERT_TRUE(check->diverged);
  EXPECT_THAT(check->summary, HasSubstr("first divergent decision: tp [0,1,2,3,4,5,6,7,8,9,10,11,"
                                        "12,13,14,15] call 0 at step 0 embedding"));
  EXPECT_THAT(check->summary, HasSubstr("ranks 0-13,15 chose fused/one_shot: max_tokens=2048"));
  EXPECT_THAT(check->summary, HasSubstr("rank 14 chose fused/one_shot: max_tokens=8"));
  EXPECT_EQ(check->details["kind"], "decision");
}

TEST(DecisionLogTest, TwoRunsOfOneScenarioCompareRankByRank) {
  const std::vector<RankDecisionLog> reference =
      SimulatedLogs("faults/tp16-gb200-capacity-view", "reference");
  absl::StatusOr<DecisionLogCheck> same = CompareDecisionLogRuns(reference, reference);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_FALSE(same->diverged) << same->summary;
  const std::vector<RankDecisionLog> mutant =
      SimulatedLogs("faults/tp16-gb200-capacity-view", "capacity-from-local-view");
  absl::StatusOr<DecisionLogCheck> other = CompareDecisionLogRuns(reference, mutant);
  ASSERT_TRUE(other.ok()) << other.status();
  ASSERT_TRUE(other->diverged);
  EXPECT_THAT(other->summary, HasSubstr("rank 14's call 0"));
  EXPECT_THAT(other->summary, HasSubstr("max_tokens=8"));
}

// Hand-made logs of two ranks on tp [0,1].
std::string Header(int rank) { return DecisionLogHeader(rank, 2, "python", "").dump() + "\n"; }
std::string Entry(int call, int seq, const std::string& site, const std::string& backend,
                  bool initialized) {
  return nlohmann::json{{"call", call},
                        {"group", "tp"},
                        {"peers", {0, 1}},
                        {"seq", seq},
                        {"site", site},
                        {"tokens", 4},
                        {"hidden", 4096},
                        {"dtype", "bf16"},
                        {"backend", backend},
                        {"algorithm", nullptr},
                        {"inputs", {{"workspace_initialized", initialized}}}}
             .dump() +
         "\n";
}

DecisionLogCheck Check(const std::string& rank0, const std::string& rank1) {
  std::vector<RankDecisionLog> logs;
  for (const auto& [text, path] : {std::pair{rank0, "rank-0.jsonl"}, {rank1, "rank-1.jsonl"}}) {
    absl::StatusOr<RankDecisionLog> log = ParseDecisionLog(text, path);
    EXPECT_TRUE(log.ok()) << log.status();
    if (log.ok()) logs.push_back(*std::move(log));
  }
  absl::StatusOr<DecisionLogCheck> check = CheckDecisionLogs(logs);
  EXPECT_TRUE(check.ok()) << check.status();
  return check.ok() ? *check : DecisionLogCheck{};
}

TEST(DecisionLogTest, AnInjectedDivergenceInHandMadeLogsIsNamed) {
  const std::string agree = Entry(0, 0, "layer 0", "fused", true);
  const DecisionLogCheck c = Check(Header(0) + agree + Entry(1, 1, "layer 1", "fused", true),
                                   Header(1) + agree + Entry(1, 1, "layer 1", "nccl", false));
  ASSERT_TRUE(c.diverged);
  // The second call, not the first one on which they agreed.
  EXPECT_EQ(c.summary,
            "first divergent decision: tp [0,1] call 1 at layer 1: rank 0 chose fused: "
            "backend=fused, workspace_initialized=true; rank 1 chose nccl: backend=nccl, "
            "workspace_initialized=false");
  EXPECT_TRUE(Check(Header(0) + agree, Header(1) + agree).summary.find("alike") !=
              std::string::npos);
}

TEST(DecisionLogTest, CallSequencesThatDivergeInLengthOrOrderAreNamed) {
  const std::string a = Entry(0, 0, "layer 0", "fused", true);
  const std::string b = Entry(1, 1, "layer 1", "fused", true);
  const DecisionLogCheck shorter = Check(Header(0) + a + b, Header(1) + a);
  ASSERT_TRUE(shorter.diverged);
  EXPECT_EQ(shorter.summary,
            "call sequences diverge on tp [0,1] at its call 1 (layer 1): rank 0 made it, rank 1 "
            "never did");
  const DecisionLogCheck reordered =
      Check(Header(0) + a + b, Header(1) + a + Entry(1, 1, "layer 2", "fused", true));
  ASSERT_TRUE(reordered.diverged);
  EXPECT_EQ(reordered.summary,
            "call order diverges on tp [0,1] at its call 1: rank 0 at layer 1; rank 1 at layer 2");
}

TEST(DecisionLogTest, BadLogsAreRefusedNamingTheFileLineAndKey) {
  auto error = [](const std::string& text) {
    return std::string(ParseDecisionLog(text, "rank-0.jsonl").status().message());
  };
  EXPECT_THAT(error(""), HasSubstr("rank-0.jsonl:1: empty"));
  EXPECT_THAT(error("{\"format\":\"other\"}\n"), HasSubstr("rank-0.jsonl:1: the first line"));
  EXPECT_THAT(error(Header(0) + "not json\n"), HasSubstr("rank-0.jsonl:2: not a JSON object"));
  EXPECT_THAT(error(Header(0) + std::string(100000, '[') + "\n"),
              HasSubstr("rank-0.jsonl:2: a line of 100000 bytes"));
  EXPECT_THAT(error(Header(0) + "{\"call\":0}\n"),
              HasSubstr("rank-0.jsonl:2: missing key 'group'"));
  nlohmann::json e = nlohmann::json::parse(Entry(0, 0, "x", "fused", true));
  e["peers"] = {1};
  EXPECT_THAT(error(Header(0) + e.dump() + "\n"),
              HasSubstr("rank-0.jsonl:2: key 'peers': the group must include this log's rank 0"));
  e["peers"] = {0, 5};
  EXPECT_THAT(error(Header(0) + e.dump() + "\n"),
              HasSubstr("every peer must be a rank below the world size 2"));
  e["peers"] = {0, 1};
  e["inputs"] = {{"x", {1, 2}}};
  EXPECT_THAT(error(Header(0) + e.dump() + "\n"),
              HasSubstr("input 'x' must be a boolean, a number or a string"));
  // A peer without a log is an error, not a divergence.
  absl::StatusOr<RankDecisionLog> only =
      ParseDecisionLog(Header(0) + Entry(0, 0, "x", "fused", true), "rank-0.jsonl");
  ASSERT_TRUE(only.ok());
  absl::StatusOr<DecisionLogCheck> check = CheckDecisionLogs({*only});
  EXPECT_EQ(check.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(check.status().message(), HasSubstr("rank 1 is a peer of tp [0,1]"));
}

struct CliResult {
  int code;
  std::string out, err;
};
CliResult Lockstep(std::vector<std::string> args) {
  args.insert(args.begin(), "lockstep");
  std::ostringstream out, err;
  const int code = cli::Main(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(CheckLogCommandTest, SimWritesTheLogsAndCheckLogExitsZeroOneOrTwo) {
  const std::string dir = testing::ScratchDir() + "/decision_logs";
  std::filesystem::remove_all(dir);
  const CliResult sim =
      Lockstep({"sim", testing::TopologiesDir() + "/scenarios/tp4-ep2-qwen3-h200.yaml",
                "--decision-log", dir});
  ASSERT_EQ(sim.code, cli::kExitOk) << sim.err;
  const CliResult clean = Lockstep({"check-log", dir});
  EXPECT_EQ(clean.code, cli::kExitOk) << clean.err;
  EXPECT_THAT(clean.out, HasSubstr("agree: 108 calls of 4 ranks"));
  // Change one rank's decision by hand: exit 1, naming it.
  {
    std::ifstream in(dir + "/rank-2.jsonl");
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    const size_t at = s.find("\"backend\":\"fused\"", s.find('\n'));
    ASSERT_NE(at, std::string::npos);
    s.replace(at, 17, "\"backend\":\"nccl\"");
    std::ofstream(dir + "/rank-2.jsonl") << s;
  }
  const CliResult diverged = Lockstep({"check-log", dir, "--json"});
  EXPECT_EQ(diverged.code, cli::kExitUnexpected) << diverged.err;
  EXPECT_THAT(diverged.out, HasSubstr("rank 2 chose nccl"));
  // A missing rank: exit 2, naming it.
  std::filesystem::remove(dir + "/rank-3.jsonl");
  const CliResult missing = Lockstep({"check-log", dir});
  EXPECT_EQ(missing.code, cli::kExitUsage);
  EXPECT_THAT(missing.err, HasSubstr("rank 3 is a peer of tp [0,1,2,3]"));
  const CliResult none = Lockstep({"check-log", dir + "/nowhere"});
  EXPECT_EQ(none.code, cli::kExitUsage);
  EXPECT_THAT(none.err, HasSubstr("not a directory of decision logs"));
}

}  // namespace
}  // namespace lockstep
