// lockstep import: a deployment's launch flags become a scenario that
// simulates; flags the program does not have, given twice, ambiguous, or
// naming a path lockstep does not model exit 2 naming them
// (sim/scenario/serving_import.h, docs/IMPORT.md).

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/scenario/serving_import.h"
#include "tests/scratch_dir.h"

namespace lockstep::cli {
namespace {

using ::testing::HasSubstr;

struct Result {
  int code;
  std::string out, err;
};

Result Lockstep(std::vector<std::string> args) {
  args.insert(args.begin(), "lockstep");
  std::ostringstream out, err;
  const int code = Main(args, out, err);
  return {code, out.str(), err.str()};
}

std::string Scratch() { return testing::ScratchDir() + "/import_test-" + std::to_string(getpid()); }

// A Hugging Face config.json of DeepSeek-V3's shape, in a model directory.
std::string ModelDir() {
  // Per process: ctest runs the tests of this file in parallel processes.
  const std::string dir = Scratch() + "/DeepSeek-V3";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json")
      << R"({"architectures": ["DeepseekV3ForCausalLM"], "hidden_size": 7168,
             "num_hidden_layers": 61, "num_attention_heads": 128, "n_routed_experts": 256,
             "first_k_dense_replace": 3})";
  return dir;
}

ImportOptions Options() {
  ImportOptions o;
  o.catalogue = LOCKSTEP_SOURCE_DIR "/topologies";
  return o;
}

TEST(ImportTest, SglangDpAttentionFlagsBecomeAScenarioThatSimulates) {
  const std::string out = Scratch() + "/dpattn.yaml";
  const Result r =
      Lockstep({"import", "sglang", "--out", out, "--", "--model-path", ModelDir(), "--tp", "8",
                "--ep", "8", "--enable-dp-attention", "--dp", "8",
                "--enable-flashinfer-allreduce-fusion", "--mem-fraction-static", "0.8"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, HasSubstr("model: DeepSeek-V3 from"));
  EXPECT_THAT(r.err, HasSubstr("not modelled (no effect on the all-reduce dispatch lockstep "
                               "checks): --mem-fraction-static"));
  absl::StatusOr<Scenario> s = LoadScenarioFile(out, LOCKSTEP_SOURCE_DIR "/topologies");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->parallel.tp, 8);
  EXPECT_EQ(s->parallel.ep, 8);
  EXPECT_EQ(s->parallel.dp, 8);
  EXPECT_TRUE(s->parallel.dp_attention);
  EXPECT_EQ(s->model.hidden, 7168);
  EXPECT_EQ(s->model.first_moe_layer, 3);
  EXPECT_EQ(s->dispatch.fused_backend, FusionBackendFlag::kAuto);
  const Result sim = Lockstep({"sim", out});
  EXPECT_EQ(sim.code, kExitOk) << sim.err;
  EXPECT_THAT(sim.out, HasSubstr("verdict: clean"));
}

TEST(ImportTest, SglangFlagsAreReadAsItsParserReadsThem) {
  const ImportOptions o = Options();
  // --tp and --dp are unique prefixes of --tp-size and --dp-size (argparse
  // allow_abbrev); --flag=value works; the catalogue model by name.
  absl::StatusOr<ImportedScenario> s = ImportSglangFlags(
      std::vector<std::string>{"--model-path", "Qwen/Qwen3-30B-A3B", "--tp=4", "--ep-size", "2",
                               "--cuda-graph-bs-decode", "1", "2", "4", "8", "16", "32",
                               "--disable-custom-all-reduce", "--dtype", "float16"},
      o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->scenario.parallel.tp, 4);
  EXPECT_EQ(s->scenario.parallel.ep, 2);
  EXPECT_EQ(s->scenario.model.name, "qwen3-30b-a3b");
  EXPECT_FALSE(s->scenario.dispatch.custom_allreduce);
  EXPECT_EQ(s->scenario.dispatch.dtype, DType::kFp16);
  EXPECT_EQ(s->scenario.workload.tokens, (std::vector<int64_t>{1, 4, 16, 32}));
}

TEST(ImportTest, BadSglangFlagsExitTwoNamingThem) {
  const std::string model = ModelDir();
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--tp", "4", "--tpx", "2"}, "unknown flag --tpx"},
      {{"--pp", "2"}, "ambiguous option --pp could match --pp-async-batch-depth"},
      {{"--tp", "4", "--tp-size", "2"}, "--tp 4 and --tp-size 2 set the same option"},
      {{"--tp", "four"}, "--tp: 'four' is not an integer"},
      {{"--tp", "4", "--enable-mscclpp"}, "lockstep cannot represent --enable-mscclpp"},
      {{"--tp", "4", "--moe-a2a-backend", "deepep"}, "cannot represent --moe-a2a-backend deepep"},
      {{"--tp", "16"}, "a world of 16 ranks spans nodes: name the hardware with --hardware"},
      {{"--tp", "8", "--ep", "3"}, "Pick an ep that divides tp/moe_dp"},
      {{"--enable-flashinfer-allreduce-fusion", "--flashinfer-allreduce-fusion-backend", "mnnvl"},
       "both choose the fusion backend"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"import", "sglang", "--", "--model-path", model};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const Result r = Lockstep(args);
    EXPECT_EQ(r.code, kExitUsage) << c.message << ": " << r.out;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
  const Result no_model = Lockstep({"import", "sglang", "--", "--model-path", "org/unknown-model"});
  EXPECT_EQ(no_model.code, kExitUsage);
  EXPECT_THAT(no_model.err, HasSubstr("give --model-config CONFIG_JSON"));
  const Result no_dash = Lockstep({"import", "sglang", "--tp", "4"});
  EXPECT_EQ(no_dash.code, kExitUsage);
}

TEST(ImportTest, VllmServeFlagsMapOntoTheLayoutAndSayWhatTheyCannotRepresent) {
  const std::string out = Scratch() + "/vllm.yaml";
  const Result r =
      Lockstep({"import", "vllm", "--out", out, "--", ModelDir(), "-tp", "4", "-dp", "2",
                "--enable-expert-parallel", "--compilation-config",
                R"({"pass_config": {"enable_fi_allreduce_fusion": true}})", "--port", "8000"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, HasSubstr("attention DP 2 over 8 ranks with EP 8"));
  EXPECT_THAT(r.err, HasSubstr("modelled as SGLang's v1 generation"));
  absl::StatusOr<Scenario> s = LoadScenarioFile(out, LOCKSTEP_SOURCE_DIR "/topologies");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->parallel.tp, 8);
  EXPECT_EQ(s->parallel.attn_dp, 2);
  EXPECT_EQ(s->parallel.ep, 8);
  EXPECT_EQ(s->dispatch.fused_backend, FusionBackendFlag::kTrtllm);
  EXPECT_FALSE(s->dispatch.custom_allreduce_v2);
  EXPECT_EQ(Lockstep({"sim", out}).code, kExitOk);
  const Result bad = Lockstep(
      {"import", "vllm", "--", ModelDir(), "--tensor-parallel-size", "2", "--enable-lora"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("unknown flag --enable-lora"));
}

TEST(ImportTest, SpeculativeFlagsCarryTheContextLimitAndTheDraftLength) {
  const ImportOptions o = Options();
  absl::StatusOr<ImportedScenario> sglang = ImportSglangFlags(
      std::vector<std::string>{"--model-path", ModelDir(), "--tp", "8", "--speculative-algorithm",
                               "EAGLE", "--speculative-num-draft-tokens", "4", "--context-length",
                               "4096"},
      o);
  ASSERT_TRUE(sglang.ok()) << sglang.status();
  EXPECT_TRUE(sglang->scenario.workload.speculative);
  EXPECT_EQ(sglang->scenario.workload.max_model_len, 4096);
  EXPECT_EQ(sglang->scenario.workload.draft_tokens, 4);
  EXPECT_THAT(absl::StrJoin(sglang->notes, "\n"), HasSubstr("--context-length 4096"));
  // Without a draft model the limit has nothing to skip: not carried.
  absl::StatusOr<ImportedScenario> plain = ImportSglangFlags(
      std::vector<std::string>{"--model-path", ModelDir(), "--tp", "8", "--context-length", "4096"},
      o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->scenario.workload.max_model_len, 0);

  absl::StatusOr<ImportedScenario> vllm = ImportVllmFlags(
      std::vector<std::string>{ModelDir(), "-tp", "8", "--max-model-len", "8192",
                               "--speculative-config",
                               R"({"method": "eagle", "num_speculative_tokens": 3})"},
      o);
  ASSERT_TRUE(vllm.ok()) << vllm.status();
  EXPECT_EQ(vllm->scenario.workload.max_model_len, 8192);
  EXPECT_EQ(vllm->scenario.workload.draft_tokens, 3);
  const Result bad = Lockstep({"import", "vllm", "--", ModelDir(), "-tp", "8",
                               "--speculative-config", R"({"num_speculative_tokens": 0})"});
  EXPECT_EQ(bad.code, kExitUsage);
  EXPECT_THAT(bad.err, HasSubstr("num_speculative_tokens must be an integer"));
}

// A config.json is refused where a number in it is outside what a scenario
// takes, naming the file and the key, never cut to fit (a head count of
// 2^32 + 8 once became 8; 2^63 layers became 10 000).
TEST(ImportTest, ConfigNumbersOutsideTheScenarioRangesAreRefusedByKey) {
  const std::string dir = Scratch() + "/configs";
  std::filesystem::create_directories(dir);
  const struct {
    std::string fields;
    std::string says;
  } cases[] = {
      {R"("hidden_size": 4611686018427387904, "num_hidden_layers": 2)",
       "hidden_size 4611686018427387904 is out of range [1, 1048576]"},
      {R"("hidden_size": 4096, "num_hidden_layers": 9223372036854775807)",
       "num_hidden_layers 9223372036854775807 is out of range [1, 10000]"},
      {R"("hidden_size": 4096, "num_hidden_layers": 0)",
       "num_hidden_layers 0 is out of range [1, 10000]"},
      {R"("hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 4294967304)",
       "num_attention_heads 4294967304 is out of range [1, 1048576]"},
      {R"("hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": -8)",
       "num_attention_heads -8 is out of range [1, 1048576]"},
      {R"("hidden_size": 4096, "num_hidden_layers": 2, "n_routed_experts": -1)",
       "n_routed_experts -1 is out of range [0, 1048576]"},
      {R"("hidden_size": 4096, "num_hidden_layers": 4, "n_routed_experts": 8,
          "first_k_dense_replace": -5)",
       "first_k_dense_replace -5 is out of range [0, 10000]"},
      {R"("hidden_size": 4096, "num_hidden_layers": 2,
          "num_attention_heads": 18446744073709551615)",
       "num_attention_heads 18446744073709551615 is out of range"},
  };
  for (const auto& c : cases) {
    const std::string config = dir + "/config.json";
    std::ofstream(config) << "{" << c.fields << "}";
    const absl::StatusOr<ImportedScenario> s =
        ImportSglangFlags(std::vector<std::string>{"--model-path", "x/y", "--tp", "2"}, [&] {
          ImportOptions o = Options();
          o.model_config = config;
          return o;
        }());
    ASSERT_FALSE(s.ok()) << c.fields;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(config + ": " + c.says)) << c.fields;
  }
  // A config cut to fewer layers than its dense prefix keeps its last layer MoE.
  const std::string config = dir + "/config.json";
  std::ofstream(config) << R"({"hidden_size": 4096, "num_hidden_layers": 2,
                               "n_routed_experts": 8, "first_k_dense_replace": 3,
                               "num_attention_heads": 32})";
  ImportOptions o = Options();
  o.model_config = config;
  const absl::StatusOr<ImportedScenario> s =
      ImportSglangFlags(std::vector<std::string>{"--model-path", "x/y", "--tp", "2"}, o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->scenario.model.moe);
  EXPECT_EQ(s->scenario.model.first_moe_layer, 1);
  EXPECT_EQ(s->scenario.model.attention_heads, 32);
}

// vLLM reads --speculative-config as a JSON object; anything else is refused,
// not taken as speculative decoding with the default draft.
TEST(ImportTest, ASpeculativeConfigThatIsNotAJsonObjectIsRefused) {
  for (const std::string& spec :
       std::vector<std::string>{"eagle", "[1, 2]", "3", std::string(100, '[')}) {
    const absl::StatusOr<ImportedScenario> s = ImportVllmFlags(
        std::vector<std::string>{ModelDir(), "-tp", "8", "--speculative-config", spec}, Options());
    ASSERT_FALSE(s.ok()) << spec;
    EXPECT_THAT(std::string(s.status().message()),
                HasSubstr("--speculative-config '" + spec.substr(0, 10)))
        << spec;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("not a JSON object")) << spec;
  }
}

}  // namespace
}  // namespace lockstep::cli
