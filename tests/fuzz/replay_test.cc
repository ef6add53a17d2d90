// Replays every seed-corpus file through a fuzz target's entry point, so that
// `ctest -L fuzz` runs the corpus with any compiler (the libFuzzer builds need
// clang). Linked once per target (scenario_parser_fuzzer.cc,
// simulate_fuzzer.cc, results_file_fuzzer.cc, decision_log_fuzzer.cc,
// replay_file_fuzzer.cc, import_fuzzer.cc), with
// that target's corpus directories (LOCKSTEP_FUZZ_CORPUS, comma-separated,
// under the source root) and the fewest files they hold
// (LOCKSTEP_FUZZ_CORPUS_MIN). Inputs that once crashed a target live in its
// corpus too, so every finding stays a regression test.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// Every file under the seed-corpus directories, relative to the source root.
std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  for (const std::string& dir :
       std::vector<std::string>(absl::StrSplit(LOCKSTEP_FUZZ_CORPUS, ','))) {
    std::error_code ec;
    for (const auto& entry :
         fs::recursive_directory_iterator(fs::path(LOCKSTEP_SOURCE_DIR) / dir, ec)) {
      if (!entry.is_regular_file() || entry.path().filename().string().starts_with(".")) continue;
      files.push_back(fs::relative(entry.path(), LOCKSTEP_SOURCE_DIR, ec).generic_string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

class FuzzCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzCorpusTest, ReplaysThroughTheFuzzTarget) {
  std::ifstream in(fs::path(LOCKSTEP_SOURCE_DIR) / GetParam(), std::ios::binary);
  ASSERT_TRUE(in) << GetParam();
  std::stringstream bytes;
  bytes << in.rdbuf();
  const std::string input = bytes.str();
  EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size()),
            0);
}

TEST(FuzzCorpusSizeTest, TheCorpusHoldsWhatItShould) {
  EXPECT_GE(CorpusFiles().size(), size_t{LOCKSTEP_FUZZ_CORPUS_MIN}) << LOCKSTEP_FUZZ_CORPUS;
}

INSTANTIATE_TEST_SUITE_P(Corpus, FuzzCorpusTest, ::testing::ValuesIn(CorpusFiles()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           std::string name = param.param;
                           for (char& c : name) {
                             if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                   (c >= '0' && c <= '9'))) {
                               c = '_';
                             }
                           }
                           return name;
                         });

}  // namespace
