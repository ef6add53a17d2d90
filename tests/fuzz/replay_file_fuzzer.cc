// libFuzzer target: the reader of reports and replay bundles
// (faults/replay_file.h), which lockstep replay and shrink run on files that
// travel — a bundle written on a cluster's node and replayed elsewhere, a
// report attached to a bug, either of them cut off or edited. It must never
// crash, hang or allocate what the file asks for; what it refuses must be
// named by the file; what it accepts must write back as the replay bundle
// lockstep explore and merge write (MakeReplayBundle), which reads back to the
// same run — scenario (as YAML), seed, policy, schedule, verdict, trace hash,
// build, signature and size — and writes the same text again. The schedule
// and policy it names, which replay passes on to the simulator, are made or
// refused with a message that says which of the two is wrong.
// Seed corpus: tests/fuzz/replay_corpus (written by lockstep sim --report,
// explore --out and merge, and edited).

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/match.h"
#include "faults/mutants.h"
#include "faults/replay_file.h"
#include "sim/runtime/scheduler.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/scenario/verdict.h"

namespace {

constexpr char kFile[] = "fuzz.json";

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "replay_file_fuzzer: %s\n%.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  __builtin_trap();
}

const lockstep::PolicyRegistry& Registry() {
  static const lockstep::PolicyRegistry* const kRegistry =
      new lockstep::PolicyRegistry(lockstep::faults::MakePolicyRegistry());
  return *kRegistry;
}

// `file` as the replay bundle of a failure group whose smallest run it is.
std::string AsBundle(const lockstep::faults::ReplayFile& file) {
  const absl::StatusOr<lockstep::Verdict> verdict = lockstep::ParseVerdict(file.verdict);
  uint64_t hash = 0;
  const char* digits = file.trace_hash.data() + 2;
  const char* end = file.trace_hash.data() + file.trace_hash.size();
  if (!verdict.ok() || file.trace_hash.size() != 18 ||
      std::from_chars(digits, end, hash, 16).ptr != end) {
    Fail("an accepted file's verdict or trace hash does not parse",
         file.verdict + " " + file.trace_hash);
  }
  lockstep::faults::ExploreOptions options;
  options.schedule = file.options.schedule;
  lockstep::faults::FailureGroup group;
  group.signature = file.signature;
  group.runs = file.runs;
  group.smallest.seed = file.options.seed;
  group.smallest.verdict = *verdict;
  group.smallest.trace_hash = hash;
  group.smallest.policy = file.options.policy;
  const absl::StatusOr<nlohmann::json> bundle =
      lockstep::faults::MakeReplayBundle(file.build, file.scenario, options, group);
  if (!bundle.ok()) {
    Fail("MakeReplayBundle refuses an accepted file", std::string(bundle.status().message()));
  }
  return bundle->dump(2) + "\n";
}

bool SameRun(const lockstep::faults::ReplayFile& a, const lockstep::faults::ReplayFile& b) {
  return lockstep::ScenarioToYaml(a.scenario) == lockstep::ScenarioToYaml(b.scenario) &&
         a.scenario.name == b.scenario.name && a.scenario.path == b.scenario.path &&
         a.options.seed == b.options.seed && a.options.policy == b.options.policy &&
         a.options.schedule == b.options.schedule && a.verdict == b.verdict &&
         a.trace_hash == b.trace_hash && a.build == b.build && a.signature == b.signature &&
         a.runs == b.runs;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<lockstep::faults::ReplayFile> file =
      lockstep::faults::ParseReplayFile(text, kFile);
  if (!file.ok()) {
    const std::string message(file.status().message());
    if (!message.starts_with(kFile)) Fail("a refusal does not name the file", message);
    return 0;
  }

  const std::string bundle = AsBundle(*file);
  const absl::StatusOr<lockstep::faults::ReplayFile> back =
      lockstep::faults::ParseReplayFile(bundle, "back.json");
  if (!back.ok()) {
    Fail("MakeReplayBundle wrote what ParseReplayFile refuses",
         std::string(back.status().message()) + "\n" + bundle);
  }
  if (!back->bundle) Fail("a bundle written back reads as a report", bundle);
  if (!SameRun(*file, *back)) Fail("the bundle written back holds another run", bundle);
  if (AsBundle(*back) != bundle) Fail("write, read, write differs", bundle);

  // What replay does next with the names the file gives.
  const absl::StatusOr<std::unique_ptr<lockstep::SchedulePolicy>> schedule =
      lockstep::MakeSchedule(file->options.schedule, 8, 1, file->options.seed);
  if (!schedule.ok() && !absl::StrContains(schedule.status().message(), "schedule")) {
    Fail("a schedule refused without saying so", std::string(schedule.status().message()));
  }
  const absl::StatusOr<std::unique_ptr<lockstep::DispatchPolicy>> policy =
      Registry().Create(file->options.policy);
  if (!policy.ok() && !absl::StrContains(policy.status().message(), "policy")) {
    Fail("a policy refused without saying so", std::string(policy.status().message()));
  }
  return 0;
}
