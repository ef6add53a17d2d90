// libFuzzer target: the result-file reader (faults/results_file.h), which
// lockstep merge and explore --resume run on files that come back from a
// cluster's shards — cut off by a preemption, edited, or not ours at all. It
// must never crash, hang or allocate what the file's numbers ask for; what it
// refuses must be named by the file (and line); what it accepts must write back
// (WriteResultFile) to a file it reads back to the same runs, and that writes
// the same text again; and merging it alone must succeed exactly when it is
// the whole of an exploration (shard 0 of 1, not stopped), then render the
// summary, the Markdown table and the replay bundles as lockstep merge does.
// Seed corpus: tests/fuzz/results_corpus (written by lockstep explore --out).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faults/explore.h"
#include "faults/replay_file.h"
#include "faults/results_file.h"

namespace {

constexpr char kFile[] = "fuzz.jsonl";

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "results_file_fuzzer: %s\n%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  __builtin_trap();
}

std::string Write(const lockstep::faults::ShardFile& file) {
  lockstep::faults::ExploreResult result =
      lockstep::faults::SummarizeOutcomes(file.scenarios, file.outcomes);
  result.stopped = file.stopped;
  std::ostringstream out;
  lockstep::faults::WriteResultFile(out, file.scenarios, file.options, result, file.build,
                                    file.unreadable);
  return out.str();
}

bool SameRuns(const lockstep::faults::ShardFile& a, const lockstep::faults::ShardFile& b) {
  if (a.outcomes.size() != b.outcomes.size()) return false;
  for (size_t i = 0; i < a.outcomes.size(); ++i) {
    const lockstep::faults::SeedOutcome& x = a.outcomes[i];
    const lockstep::faults::SeedOutcome& y = b.outcomes[i];
    if (x.index != y.index || x.scenario != y.scenario || x.seed != y.seed ||
        x.verdict != y.verdict || x.acceptable != y.acceptable || x.trace_hash != y.trace_hash ||
        x.summary != y.summary || x.policy != y.policy || x.signature != y.signature) {
      return false;
    }
  }
  return a.shard_index == b.shard_index && a.shard_count == b.shard_count && a.build == b.build &&
         a.stopped == b.stopped;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  absl::StatusOr<lockstep::faults::ShardFile> file = lockstep::faults::ReadResultFile(in, kFile);
  if (!file.ok()) {
    const std::string message(file.status().message());
    if (!message.starts_with(std::string(kFile) + ":")) {
      Fail("a refusal does not name the file", message);
    }
    return 0;
  }

  const std::string text = Write(*file);
  std::istringstream back_in(text);
  absl::StatusOr<lockstep::faults::ShardFile> back =
      lockstep::faults::ReadResultFile(back_in, "back.jsonl");
  if (!back.ok()) {
    Fail("WriteResultFile wrote what ReadResultFile refuses", std::string(back.status().message()));
  }
  if (!SameRuns(*file, *back)) Fail("the file written back holds other runs", text);
  if (Write(*back) != text) Fail("write, read, write differs", text);

  const bool whole = file->shard_count == 1 && !file->stopped;
  absl::StatusOr<lockstep::faults::MergedExploration> merged =
      lockstep::faults::MergeShards({*std::move(file)});
  if (merged.ok() != whole) {
    Fail(whole ? "merging the whole exploration failed" : "merging a part of one succeeded",
         merged.ok() ? text : std::string(merged.status().message()));
  }
  if (!merged.ok()) return 0;
  // What lockstep merge prints and writes.
  (void)lockstep::faults::FormatExploreSummary(merged->scenarios, merged->result, merged->options);
  (void)lockstep::faults::FormatExploreMarkdown(merged->scenarios, merged->result, merged->options);
  size_t number = 0;
  for (const lockstep::faults::FailureGroup& group : merged->result.failures) {
    const lockstep::Scenario& scenario = merged->scenarios[group.scenario];
    (void)lockstep::faults::BundleFileName(++number, scenario, group);
    absl::StatusOr<nlohmann::json> bundle =
        lockstep::faults::MakeReplayBundle(merged->build, scenario, merged->options, group);
    if (bundle.ok()) (void)bundle->dump();
  }
  return 0;
}
