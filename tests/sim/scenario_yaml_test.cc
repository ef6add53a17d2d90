#include "sim/scenario/scenario_yaml.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

using ::lockstep::testing::TopologiesDir;
using ::testing::AllOf;
using ::testing::HasSubstr;

absl::Status ParseError(const std::string& yaml) {
  return ParseScenario(yaml, "bad.yaml", TopologiesDir()).status();
}

const char* kValid = R"(version: 1
name: ok
hardware: h200x8
parallel: {tp: 4, ep: 2}
model: qwen3-30b-a3b
dispatch: {max_tokens: 256, dtype: fp16, policy: reference}
workload: {steps: 2, tokens: [1, 8], data: numeric}
faults:
  - {kind: kernel_launch_failure, ranks: [1], at_call: 3}
timeouts: {kernel_wait_ms: 5}
expect: fail_stop
)";

TEST(ScenarioYamlTest, ParsesEveryKeyAndResolvesCatalogueNames) {
  absl::StatusOr<Scenario> s = ParseScenario(kValid, "ok.yaml", TopologiesDir());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->hardware.gpus_per_node, 8);
  EXPECT_EQ(s->model.hidden, 2048);
  EXPECT_EQ(s->parallel.ep, 2);
  EXPECT_EQ(s->dispatch.dtype, DType::kFp16);
  EXPECT_EQ(s->workload.tokens, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(s->workload.data, DataMode::kNumeric);
  ASSERT_EQ(s->faults.size(), 1u);
  EXPECT_EQ(s->faults[0].kind, "kernel_launch_failure");
  EXPECT_EQ(s->faults[0].at_call, 3);
  EXPECT_EQ(s->faults[0].line, 9);
  EXPECT_EQ(s->timeouts.kernel_wait_ms, 5);
  EXPECT_EQ(s->expect, Verdict::kFailStop);
}

TEST(ScenarioYamlTest, WritingAndReadingBackGivesTheSameScenario) {
  absl::StatusOr<Scenario> s = ParseScenario(kValid, "ok.yaml", TopologiesDir());
  ASSERT_TRUE(s.ok());
  const std::string yaml = ScenarioToYaml(*s);
  absl::StatusOr<Scenario> back = ParseScenario(yaml, "back.yaml", "");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(ScenarioToYaml(*back), yaml);
  EXPECT_EQ(back->parallel, s->parallel);
  EXPECT_EQ(back->model.hidden, s->model.hidden);
  EXPECT_EQ(back->hardware.intra_node.bandwidth_gbps, s->hardware.intra_node.bandwidth_gbps);
}

// A plain scalar loses a carriage return before a line break on the way
// back (the pair reads as one CRLF break), so text holding control characters
// is written double-quoted and escaped; other text keeps its plain style.
TEST(ScenarioYamlTest, TextWithControlCharactersReadsBackToTheSameBytes) {
  const std::string yaml_in = R"(version: 1
name: "ok\r\r"
description: "tab\there, bell\a, carriage return\r"
hardware: h200x8
parallel: {tp: 4}
model: qwen3-30b-a3b
workload: {steps: 1, tokens: [8]}
faults:
  - {kind: "kernel_launch_failure\r", ranks: [1], at_call: 3, "note\r": "x\r\x7f"}
)";
  absl::StatusOr<Scenario> s = ParseScenario(yaml_in, "ok.yaml", TopologiesDir());
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->name, "ok\r\r");
  const std::string yaml = ScenarioToYaml(*s);
  EXPECT_THAT(yaml, AllOf(HasSubstr("name: \"ok\\r\\r\""), HasSubstr("  name: h200x8\n"),
                          HasSubstr("carriage return\\r\"")));
  absl::StatusOr<Scenario> back = ParseScenario(yaml, "back.yaml", "");
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
  EXPECT_EQ(back->name, s->name);
  EXPECT_EQ(back->description, s->description);
  ASSERT_EQ(back->faults.size(), 1u);
  EXPECT_EQ(back->faults[0].kind, "kernel_launch_failure\r");
  EXPECT_EQ(back->faults[0].params, s->faults[0].params);
  EXPECT_EQ(ScenarioToYaml(*back), yaml);
}

TEST(ScenarioYamlTest, UnknownKeyNamesFileLineKeyAndTheClosestKnownKey) {
  const absl::Status s =
      ParseError("name: x\nhardware: h200x8\nparallel: {tp: 2, epp: 2}\nmodel: llama-3-70b\n");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bad.yaml:3: parallel.epp: unknown key; did you mean 'ep'?"));
}

TEST(ScenarioYamlTest, MalformedYamlNamesTheLine) {
  EXPECT_THAT(ParseError("name: x\nparallel: {tp: 2\nmodel: m\n").message(),
              HasSubstr("bad.yaml:3: malformed YAML"));
}

TEST(ScenarioYamlTest, WrongTypesAreRejected) {
  EXPECT_THAT(
      ParseError("name: x\nhardware: h200x8\nparallel: {tp: four}\nmodel: llama-3-70b\n").message(),
      HasSubstr("bad.yaml:3: parallel.tp: expected an integer, got 'four'"));
  EXPECT_THAT(ParseError("name: x\nhardware: h200x8\nparallel: {tp: 2}\nmodel: llama-3-70b\n"
                         "workload: {ftz: maybe}\n")
                  .message(),
              HasSubstr("workload.ftz: expected true or false"));
}

TEST(ScenarioYamlTest, ImpossibleLayoutsCarryTheRule) {
  EXPECT_THAT(
      ParseError("name: x\nhardware: h200x8\nparallel: {tp: 6, ep: 4}\nmodel: llama-3-70b\n")
          .message(),
      HasSubstr("bad.yaml:3: parallel: tp=6 is not ep*moe_dp*moe_tp for ep=4"));
}

TEST(ScenarioYamlTest, WorldsBeyondTheHardwareAreRejected) {
  EXPECT_THAT(
      ParseError("name: x\nhardware: h200x8\nparallel: {tp: 8, pp: 2}\nmodel: llama-3-70b\n")
          .message(),
      HasSubstr("the layout needs 16 GPUs but hardware 'h200x8' has 8"));
}

TEST(ScenarioYamlTest, ZeroAndHugeTokenCountsAreRejected) {
  const std::string head = "name: x\nhardware: h200x8\nparallel: {tp: 2}\nmodel: llama-3-70b\n";
  EXPECT_THAT(ParseError(head + "workload: {tokens: [1, 0]}\n").message(),
              HasSubstr("workload.tokens: token count 0 is out of range"));
  EXPECT_THAT(ParseError(head + "workload: {tokens: 999999999999}\n").message(),
              HasSubstr("out of range"));
}

TEST(ScenarioYamlTest, SampledDataTakesAPowerOfTwoStrideAndRoundTrips) {
  const std::string head = "name: x\nhardware: h200x8\nparallel: {tp: 2}\nmodel: llama-3-70b\n";
  EXPECT_THAT(ParseError(head + "workload: {data: symbolic}\n").message(),
              HasSubstr("workload.data: expected provenance, numeric or sampled, got 'symbolic'"));
  EXPECT_THAT(ParseError(head + "workload: {data: sampled, sample_stride: 1000}\n").message(),
              HasSubstr("bad.yaml:5: workload.sample_stride: expected a power of two, got 1000 "
                        "(try 512)"));
  EXPECT_THAT(ParseError(head + "workload: {data: sampled, sample_stride: 4}\n").message(),
              HasSubstr("workload.sample_stride"));
  EXPECT_THAT(ParseError(head + "workload: {data: numeric, sample_stride: 64}\n").message(),
              HasSubstr("only sampled data reads it: set workload.data: sampled or drop it"));
  EXPECT_THAT(ParseError(head + "workload: {data: sampled, sample_stride: 16384}\n").message(),
              HasSubstr("workload.sample_stride: 16384 is wider than a row (model.hidden 8192), "
                        "so some rows would keep no element: use at most 8192"));
  for (const char* workload :
       {"workload: {data: sampled}\n", "workload: {data: sampled, sample_stride: 64}\n"}) {
    absl::StatusOr<Scenario> s = ParseScenario(head + workload, "ok.yaml", TopologiesDir());
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->workload.data, DataMode::kSampled);
    const std::string yaml = ScenarioToYaml(*s);
    absl::StatusOr<Scenario> back = ParseScenario(yaml, "back.yaml", "");
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
    EXPECT_EQ(ScenarioToYaml(*back), yaml);
    EXPECT_EQ(back->workload.sample_stride, s->workload.sample_stride);
  }
}

TEST(ScenarioYamlTest, SpeculativeLengthsNeedSpeculativeAndRoundTrip) {
  const std::string head = "name: x\nhardware: h200x8\nparallel: {tp: 2}\nmodel: llama-3-70b\n";
  EXPECT_THAT(ParseError(head + "workload: {max_model_len: 10}\n").message(),
              AllOf(HasSubstr("bad.yaml:5: workload.max_model_len"),
                    HasSubstr("set workload.speculative: true or drop it")));
  EXPECT_THAT(ParseError(head + "workload: {speculative: true, draft_tokens: 0}\n").message(),
              HasSubstr("workload.draft_tokens"));
  absl::StatusOr<Scenario> s = ParseScenario(
      head +
          "workload: {speculative: true, prompt_len: 7, draft_tokens: 3, max_model_len: 12, "
          "autotune: true}\n",
      "ok.yaml", TopologiesDir());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->workload.max_model_len, 12);
  EXPECT_EQ(s->workload.prompt_len, 7);
  EXPECT_EQ(s->workload.draft_tokens, 3);
  EXPECT_TRUE(s->workload.autotune);
  absl::StatusOr<Scenario> back = ParseScenario(ScenarioToYaml(*s), "back.yaml", "");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->workload.max_model_len, 12);
  EXPECT_EQ(back->workload.prompt_len, 7);
  EXPECT_EQ(back->workload.draft_tokens, 3);
  EXPECT_TRUE(back->workload.autotune);
}

TEST(ScenarioYamlTest, MemoryModelParsesRoundTripsAndRefusesOtherValues) {
  absl::StatusOr<Scenario> plain = ParseScenario(kValid, "ok.yaml", TopologiesDir());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->memory, MemoryModel::kImmediate) << "immediate visibility is the default";
  EXPECT_THAT(ScenarioToYaml(*plain), ::testing::Not(HasSubstr("memory")))
      << "the default is not written, so existing reports keep their text";
  absl::StatusOr<Scenario> relaxed =
      ParseScenario(std::string(kValid) + "memory: relaxed\n", "ok.yaml", TopologiesDir());
  ASSERT_TRUE(relaxed.ok()) << relaxed.status();
  EXPECT_EQ(relaxed->memory, MemoryModel::kRelaxed);
  absl::StatusOr<Scenario> back = ParseScenario(ScenarioToYaml(*relaxed), "back.yaml", "");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->memory, MemoryModel::kRelaxed);
  EXPECT_THAT(ParseError(std::string(kValid) + "memory: weak\n").message(),
              AllOf(HasSubstr("bad.yaml:12: memory: expected immediate"), HasSubstr("relaxed"),
                    HasSubstr("got 'weak'")));
  EXPECT_THAT(ParseError(std::string(kValid) + "memory: [relaxed]\n").message(),
              HasSubstr("bad.yaml:12: memory: expected immediate"));
  EXPECT_THAT(ParseError(std::string(kValid) + "memroy: relaxed\n").message(),
              HasSubstr("did you mean 'memory'?"));
}

TEST(ScenarioYamlTest, RequestTimeoutsAreForOnePipelineStage) {
  const std::string head = "name: x\nhardware: h200x8\nmodel: llama-3-70b\n";
  EXPECT_THAT(
      ParseError(head + "parallel: {tp: 4, pp: 2}\nworkload: {abort_after_us: 10}\n").message(),
      AllOf(HasSubstr("bad.yaml:5: workload.abort_after_us"), HasSubstr("use pp: 1")));
  absl::StatusOr<Scenario> s = ParseScenario(
      head + "parallel: {tp: 4}\nworkload: {abort_after_us: 10}\n", "ok.yaml", TopologiesDir());
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Scenario> back = ParseScenario(ScenarioToYaml(*s), "back.yaml", "");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->workload.abort_after_us, 10);
}

TEST(ScenarioYamlTest, CudaGraphSizesAreAscendingDecodeSizesOfOneStage) {
  const std::string head = "name: x\nhardware: h200x8\nmodel: llama-3-70b\n";
  EXPECT_THAT(
      ParseError(head + "parallel: {tp: 4}\nworkload: {cuda_graph_tokens: [4, 2]}\n").message(),
      AllOf(HasSubstr("bad.yaml:5: workload.cuda_graph_tokens"), HasSubstr("ascending")));
  EXPECT_THAT(
      ParseError(head + "parallel: {tp: 4}\nworkload: {cuda_graph_tokens: [0]}\n").message(),
      HasSubstr("token count 0 is out of range"));
  EXPECT_THAT(
      ParseError(head + "parallel: {tp: 4}\nworkload: {extend: true, cuda_graph_tokens: [1]}\n")
          .message(),
      AllOf(HasSubstr("workload.cuda_graph_tokens"), HasSubstr("decode batches")));
  EXPECT_THAT(
      ParseError(head + "parallel: {tp: 4, pp: 2}\nworkload: {cuda_graph_tokens: [1]}\n").message(),
      AllOf(HasSubstr("workload.cuda_graph_tokens"), HasSubstr("use pp: 1")));
  absl::StatusOr<Scenario> s =
      ParseScenario(head + "parallel: {tp: 4}\nworkload: {cuda_graph_tokens: [1, 2, 8]}\n",
                    "ok.yaml", TopologiesDir());
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Scenario> back = ParseScenario(ScenarioToYaml(*s), "back.yaml", "");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->workload.cuda_graph_tokens, (std::vector<int64_t>{1, 2, 8}));
}

TEST(ScenarioYamlTest, UnknownCatalogueNamesListTheCatalogue) {
  const absl::Status s =
      ParseError("name: x\nhardware: h200x9\nparallel: {tp: 2}\nmodel: llama-3-70b\n");
  EXPECT_THAT(s.message(),
              HasSubstr("bad.yaml:2: hardware: unknown hardware 'h200x9'; did you mean"));
  EXPECT_THAT(s.message(), HasSubstr("gb200-nvl72"));
}

TEST(ScenarioYamlTest, FaultTargetsOutsideTheWorldAreRejected) {
  EXPECT_THAT(ParseError("name: x\nhardware: h200x8\nparallel: {tp: 4}\nmodel: llama-3-70b\n"
                         "faults:\n  - {kind: rank_killed, ranks: [4]}\n")
                  .message(),
              HasSubstr("bad.yaml:6: faults[0].ranks: rank 4 is outside the world of 4 ranks"));
}

// Issue 11: keys accepted and then ignored or merged.
TEST(ScenarioYamlTest, RepeatedFaultKeysAndRankBesideRanksAreRejected) {
  const std::string head = "name: x\nhardware: h200x8\nparallel: {tp: 4}\nmodel: llama-3-70b\n";
  EXPECT_THAT(
      ParseError(head + "faults:\n  - {kind: rank_killed, ranks: [1], at_call: 3, at_call: 5}\n")
          .message(),
      HasSubstr("bad.yaml:6: faults[0].at_call: duplicate key"));
  EXPECT_THAT(ParseError(head + "faults:\n  - {kind: straggler, rank: 1, ranks: [2]}\n").message(),
              HasSubstr("bad.yaml:6: faults[0].ranks: given with 'rank' too"));
}

TEST(ScenarioYamlTest, ASecondDocumentIsRejected) {
  EXPECT_THAT(
      ParseError("name: x\nhardware: h200x8\nparallel: {tp: 4}\nmodel: llama-3-70b\n---\nname: y\n")
          .message(),
      HasSubstr("bad.yaml:5: (top level): a second YAML document"));
  // A document end marker alone is not a second document.
  EXPECT_TRUE(
      ParseScenario("name: x\nhardware: h200x8\nparallel: {tp: 4}\nmodel: llama-3-70b\n...\n",
                    "ok.yaml", TopologiesDir())
          .ok());
}

TEST(ScenarioYamlTest, CatalogueNamesAreNamesNotPaths) {
  EXPECT_THAT(ParseError("name: x\nhardware: ../hardware/h200x8\nparallel: {tp: 4}\n"
                         "model: llama-3-70b\n")
                  .message(),
              HasSubstr("bad.yaml:2: hardware: '../hardware/h200x8' is not a catalogue name"));
}

TEST(ScenarioYamlTest, MissingRequiredKeysAreNamed) {
  EXPECT_THAT(ParseError("name: x\nhardware: h200x8\nmodel: llama-3-70b\n").message(),
              HasSubstr("parallel: required key is missing"));
}

TEST(ScenarioYamlTest, UnknownVerdictListsTheVerdicts) {
  EXPECT_THAT(ParseError("name: x\nhardware: h200x8\nparallel: {tp: 2}\nmodel: llama-3-70b\n"
                         "expect: hung\n")
                  .message(),
              HasSubstr("expect: unknown verdict 'hung': use clean, fail_stop, hang"));
}

TEST(ScenarioYamlTest, MoreStagesThanLayersAreRejected) {
  EXPECT_THAT(ParseError("name: x\nhardware: h200x8\nparallel: {tp: 2, pp: 4}\nmodel: llama-3-70b\n"
                         "workload: {layers: 2}\n")
                  .message(),
              HasSubstr("pp=4 stages but only 2 layers"));
}

TEST(ScenarioYamlTest, EveryCatalogueFileParses) {
  for (const char* name : {"h200x8", "h200x2", "gb200-nvl72"}) {
    EXPECT_TRUE(LoadHardwareFile(TopologiesDir() + "/hardware/" + name + ".yaml").ok()) << name;
  }
  for (const char* name : {"deepseek-v3", "deepseek-v4", "qwen3-30b-a3b", "llama-3-70b"}) {
    EXPECT_TRUE(LoadModelFile(TopologiesDir() + "/models/" + name + ".yaml").ok()) << name;
  }
}

}  // namespace
}  // namespace lockstep
