// libFuzzer target: the decision-log reader and checks (sim/report/decision_log.h)
// that lockstep check-log runs on the per-rank logs an engine or a GPU run
// wrote on a cluster — cut off, mixed from two runs, edited, or not ours. The
// input is the logs of several ranks, one after another, separated by lines
// "----": part k is rank k's file, "rank-K.jsonl". It must never crash or
// allocate what a log's numbers ask for; what it refuses must name the file
// (and line); logs it reads are checked group by group (CheckDecisionLogs), and
// a run compared with itself (CompareDecisionLogRuns) never diverges.
// Seed corpus: tests/fuzz/decision_log_corpus (from lockstep sim --decision-log).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "sim/report/decision_log.h"

namespace {

constexpr std::string_view kSeparator = "\n----\n";
constexpr int kMaxRanks = 8;

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "decision_log_fuzzer: %s\n%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<lockstep::RankDecisionLog> logs;
  for (int rank = 0; rank < kMaxRanks && !input.empty(); ++rank) {
    const size_t cut = input.find(kSeparator);
    const std::string_view text = input.substr(0, cut);
    input =
        cut == std::string_view::npos ? std::string_view() : input.substr(cut + kSeparator.size());
    const std::string path = lockstep::DecisionLogFileName(rank);
    absl::StatusOr<lockstep::RankDecisionLog> log = lockstep::ParseDecisionLog(text, path);
    if (!log.ok()) {
      const std::string message(log.status().message());
      if (!message.starts_with(path + ":")) Fail("a refusal does not name the file", message);
      return 0;
    }
    // As ReadDecisionLogs: a file's header names its rank, and one run's
    // logs share one world.
    if (log->rank != rank || (!logs.empty() && log->world != logs.front().world)) return 0;
    logs.push_back(*std::move(log));
  }
  if (logs.empty()) return 0;

  absl::StatusOr<lockstep::DecisionLogCheck> check = lockstep::CheckDecisionLogs(logs);
  if (check.ok()) {
    (void)check->details.dump();
    if (check->summary.empty()) Fail("a check without a summary", "");
  }
  absl::StatusOr<lockstep::DecisionLogCheck> self = lockstep::CompareDecisionLogRuns(logs, logs);
  if (!self.ok()) {
    Fail("comparing the logs with themselves failed", std::string(self.status().message()));
  }
  if (self->diverged) {
    Fail("the logs differ from themselves",
         absl::StrFormat("%s\n%s", self->summary, self->details.dump()));
  }
  return 0;
}
