// lockstep explore / merge / replay / shrink / mutants / faults: running many
// seeds (sharded, or for a time budget), merging shards, reproducing and
// minimising a failure, and testing lockstep with its mutants.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/budget.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/output_file.h"
#include "cli/shard.h"
#include "cli/terminal_stream.h"
#include "faults/explore.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/replay_file.h"
#include "faults/results_file.h"
#include "faults/runner.h"
#include "faults/shrink.h"
#include "sim/report/display_text.h"
#include "sim/report/report.h"
#include "sim/run_estimate.h"
#include "sim/scenario/input_text.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep::cli {
namespace {

bool StderrIsTerminal(std::ostream& err) { return &RawStream(err) == &std::cerr && isatty(2) != 0; }

int Usage(std::ostream& err, std::string_view verb, const absl::Status& s, const FlagParser& f) {
  err << "lockstep " << verb << ": " << s.message() << "\n" << f.Usage();
  return kExitUsage;
}

// The memory budget check of one run, or of `runs` concurrent runs of the
// largest of `scenarios` (`extra` for what the command keeps per run). The
// message names `label`, else the scenario's file.
absl::Status CheckRunsFit(const std::vector<Scenario>& scenarios, const SimOptions& options,
                          uint64_t runs, uint64_t extra, std::string_view extra_what,
                          const MemoryBudget& budget, uint64_t* fitting_runs,
                          const std::string& label = "") {
  MemoryEstimate largest;
  std::string largest_path;
  for (const Scenario& s : scenarios) {
    absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(s.parallel);
    if (!layout.ok()) return layout.status();
    MemoryEstimate e = EstimateRunMemory(s, *layout, options);
    if (e.total > largest.total) {
      largest = std::move(e);
      largest_path = s.path.empty() ? s.name : s.path;
    }
  }
  const uint64_t fit = RunsThatFit(largest, runs, extra, budget);
  if (fitting_runs != nullptr) *fitting_runs = fit;
  return CheckMemory(label.empty() ? largest_path : label, largest,
                     std::max<uint64_t>(1, std::min(fit, runs)), extra, extra_what, budget);
}

}  // namespace

// What explore keeps per run (an outcome: verdict, summary, signature).
constexpr uint64_t kOutcomeBytes = 512;

namespace {

// Writes the replay bundle of every failure group into `dir`, naming each on
// `err`.
absl::Status WriteBundles(const std::string& dir, const std::string& verb, std::string_view build,
                          const std::vector<Scenario>& scenarios,
                          const faults::ExploreOptions& options,
                          const faults::ExploreResult& result, std::ostream& err) {
  for (size_t g = 0; g < result.failures.size(); ++g) {
    const faults::FailureGroup& group = result.failures[g];
    absl::StatusOr<nlohmann::json> bundle =
        faults::MakeReplayBundle(build, scenarios[group.scenario], options, group);
    if (!bundle.ok()) return bundle.status();
    const std::string path = (std::filesystem::path(dir) /
                              faults::BundleFileName(g + 1, scenarios[group.scenario], group))
                                 .string();
    if (absl::Status s = WriteOutputFile(path, bundle->dump(2) + "\n"); !s.ok()) return s;
    err << absl::StrFormat("lockstep %s: replay bundle of failure %d: lockstep replay %s\n", verb,
                           g + 1, ShellWord(path));
  }
  return absl::OkStatus();
}

// A progress line on a terminal, for explorations that run over a second.
std::function<void(const faults::ExploreProgress&)> ProgressLine(std::ostream& err,
                                                                 const faults::ExploreOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  const std::optional<double> budget =
      o.budget.count() > 0 ? std::optional<double>(static_cast<double>(o.budget.count()))
                           : std::nullopt;
  auto shown = std::make_shared<bool>(false);
  // The line redraws itself with "\r", which the error stream would show as
  // text: it goes to the terminal directly (it holds only numbers).
  return [&err, start, budget, shown](const faults::ExploreProgress& p) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool finished = p.total > 0 && p.done >= p.total;
    if (elapsed < 1.0 && !*shown) return;
    *shown = true;
    RawStream(err) << "\r" << FormatProgress(p, elapsed, budget) << "   " << (finished ? "\n" : "")
                   << std::flush;
  };
}

// SIGTERM (a scheduler's time limit, kubectl delete) or SIGINT during a --for
// exploration: stop as if the time were up, keeping what finished.
std::atomic<bool> stop_requested{false};
std::atomic<int> stop_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "set from a signal handler");

extern "C" void RequestStop(int signal) {
  stop_signal.store(signal);
  stop_requested.store(true);
}

// Installs RequestStop for SIGTERM and SIGINT while alive, and puts the
// previous handlers back after. Every SIGTERM stops (a job script may pass on
// the one its scheduler also sends lockstep); a second SIGINT acts as if
// lockstep had not caught the first (Ctrl-C twice ends the process). A
// signal ignored at start (SIGINT of a job started with &) stays ignored.
class StopOnSignals {
 public:
  StopOnSignals() {
    stop_requested.store(false);
    stop_signal.store(0);
    Install(SIGTERM, 0, &previous_term_);
    Install(SIGINT, static_cast<int>(SA_RESETHAND), &previous_int_);
  }
  ~StopOnSignals() {
    sigaction(SIGTERM, &previous_term_, nullptr);
    sigaction(SIGINT, &previous_int_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

 private:
  static void Install(int signal, int flags, struct sigaction* previous) {
    sigaction(signal, nullptr, previous);
    if (previous->sa_handler == SIG_IGN) return;
    struct sigaction action = {};
    action.sa_handler = RequestStop;
    sigemptyset(&action.sa_mask);
    action.sa_flags = flags | SA_RESTART;
    sigaction(signal, &action, nullptr);
  }

  struct sigaction previous_term_ = {};
  struct sigaction previous_int_ = {};
};

// explore --resume: the runs `file` holds, as options.done, when it is this
// shard's result file of this exploration by this build. Otherwise (no file
// yet, another exploration's or build's, a file that does not read) the
// shard runs from its start and its file is replaced, as without --resume:
// the scripts in tools/cluster pass --resume to every --seeds shard, and a
// results directory used again must not fail the next exploration.
void LoadRunsToResume(const std::string& file, const std::vector<Scenario>& scenarios,
                      const faults::Unreadable& unreadable, faults::ExploreOptions& options,
                      std::ostream& err) {
  const uint64_t runs = faults::ShardSize(faults::ExplorationSize(scenarios.size(), options),
                                          options.shard_index, options.shard_count);
  std::error_code ec;
  if (std::filesystem::symlink_status(file, ec).type() == std::filesystem::file_type::not_found) {
    err << "lockstep explore: --resume: no " << file << " yet; the shard runs from its start\n";
    return;
  }
  auto start_over = [&](const std::string& why) {
    err << "lockstep explore: --resume: " << why
        << "; the shard runs from its start and replaces it\n";
  };
  absl::StatusOr<faults::ShardFile> kept = faults::ReadResultFile(file);
  if (!kept.ok()) return start_over(std::string(kept.status().message()));
  if (kept->build != ThisBuild()) {
    return start_over(absl::StrFormat("%s was written by lockstep %s and this is lockstep %s", file,
                                      kept->build, ThisBuild()));
  }
  const nlohmann::json exploration = faults::ExplorationJson(scenarios, options, unreadable);
  if (kept->exploration != exploration) {
    return start_over(
        absl::StrFormat("%s is a shard of another exploration (%s)", file,
                        faults::ExplorationDifference(kept->exploration, exploration)));
  }
  if (kept->shard_index != options.shard_index || kept->shard_count != options.shard_count) {
    return start_over(
        absl::StrFormat("%s is shard %d of %d", file, kept->shard_index, kept->shard_count));
  }
  err << absl::StrFormat("lockstep explore: --resume: %s holds %d of the shard's %d run(s)%s\n",
                         file, kept->outcomes.size(), runs,
                         kept->stopped ? "; running the rest" : ": all of them");
  options.done = std::move(kept->outcomes);
}

}  // namespace

int RunExplore(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path, catalogue, markdown, max_memory, shard_flag, out_dir, budget_flag;
  uint64_t shard_count = 0;
  faults::ExploreOptions options;
  FlagParser flags("lockstep explore");
  flags.AddPositional("SCENARIO|DIR", &path, "a scenario file, or a directory of them", true);
  flags.AddUint64("seeds", &options.seeds, "seeds per scenario (default 100)");
  flags.AddUint64("start", &options.start, "first seed (default 1)");
  flags.AddBool("swarm", &options.swarm, "replace faults by each seed's swarm draw");
  flags.AddString("policy", &options.policy, "dispatch policy (default: each scenario's)");
  flags.AddString("schedule", &options.schedule, "random (default), pct or pct:D");
  flags.AddInt("jobs", &options.jobs, "worker threads (results do not depend on it)");
  flags.AddString("catalogue", &catalogue, "catalogue directory (hardware/, models/)");
  flags.AddString("markdown", &markdown, "also write the summary as a Markdown table here");
  flags.AddString("shard", &shard_flag,
                  "run shard I of N, I/N (default: from SLURM_ARRAY_TASK_*, srun's "
                  "SLURM_PROCID, JOB_COMPLETION_INDEX, OMPI_COMM_WORLD_* or PMI_*; "
                  "docs/CLUSTER.md)");
  flags.AddUint64("shard-count", &shard_count,
                  "the shard count where the environment gives only the index "
                  "(JOB_COMPLETION_INDEX; else LOCKSTEP_SHARD_COUNT)");
  flags.AddString("out", &out_dir,
                  "write this shard's result file (and, unsharded, the replay bundles) here");
  flags.AddString("for", &budget_flag,
                  "run random seeds for this long (90s, 40m, 2h) instead of --seeds");
  flags.AddUint64("root-seed", &options.root_seed,
                  "with --for: the seed the random seeds are drawn from (default: the clock)");
  flags.AddBool("stop-on-failure", &options.stop_on_failure,
                "with --for: stop at the first failure");
  bool resume = false;
  flags.AddBool("resume", &resume,
                "with --out and --seeds: keep the runs this shard's result file holds (a shard "
                "stopped or killed) and run the rest");
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  std::string memory_model;
  flags.AddString("memory", &memory_model,
                  "immediate or relaxed: overrides every scenario's `memory` (relaxed: stores "
                  "reach peers late and out of order, docs/SIMULATOR.md)");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "explore", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  if (options.seeds == 0 || options.seeds > 10'000'000 || options.jobs < 1 || options.jobs > 1024) {
    err << "lockstep explore: --seeds must be in [1, 10000000] and --jobs in [1, 1024]\n";
    return kExitUsage;
  }
  // Seeds are start, start + 1, ...: the last must not wrap past 2^64 - 1.
  if (options.start > std::numeric_limits<uint64_t>::max() - (options.seeds - 1)) {
    err << absl::StrFormat(
        "lockstep explore: --start %d with --seeds %d would pass the largest seed, 2^64-1 = %d; "
        "start at %d or lower\n",
        options.start, options.seeds, std::numeric_limits<uint64_t>::max(),
        std::numeric_limits<uint64_t>::max() - (options.seeds - 1));
    return kExitUsage;
  }
  const bool timed = flags.WasSet("for");
  if (timed) {
    absl::StatusOr<std::chrono::seconds> budget = ParseDuration(budget_flag);
    if (!budget.ok()) {
      err << "lockstep explore: " << budget.status().message() << "\n";
      return kExitUsage;
    }
    options.budget = *budget;
    if (flags.WasSet("seeds") || flags.WasSet("start")) {
      err << "lockstep explore: --for runs random seeds until the time is up; drop --seeds and "
             "--start (or drop --for to run those seeds)\n";
      return kExitUsage;
    }
    if (!flags.WasSet("root-seed")) {
      options.root_seed = static_cast<uint64_t>(
          std::chrono::system_clock::now().time_since_epoch() / std::chrono::nanoseconds(1));
    }
  } else if (flags.WasSet("root-seed") || flags.WasSet("stop-on-failure")) {
    err << "lockstep explore: --root-seed and --stop-on-failure go with --for DURATION; without "
           "it explore runs --seeds from --start\n";
    return kExitUsage;
  }
  if (resume && (timed || out_dir.empty())) {
    err << "lockstep explore: --resume finishes a --seeds shard from its result file: it needs "
           "--out DIR and no --for (a --for shard ends when its time does)\n";
    return kExitUsage;
  }
  absl::StatusOr<ShardSpec> shard = ResolveShard(shard_flag, flags.WasSet("shard"), shard_count,
                                                 flags.WasSet("shard-count"), ProcessEnvironment());
  if (!shard.ok()) {
    err << "lockstep explore: " << shard.status().message() << "\n";
    return kExitUsage;
  }
  options.shard_index = shard->index;
  options.shard_count = shard->count;
  if (options.shard_count > 1 && out_dir.empty()) {
    err << absl::StrFormat(
        "lockstep explore: shard %d of %d (%s) needs --out DIR for its result file, which "
        "lockstep merge DIR combines; --shard 0/1 runs the whole exploration here\n",
        options.shard_index, options.shard_count, shard->source);
    return kExitUsage;
  }
  if (options.shard_count > 1 && timed && !flags.WasSet("root-seed")) {
    err << "lockstep explore: the shards of a --for exploration draw from one root seed: give "
           "every shard the same --root-seed (e.g. --root-seed $SLURM_ARRAY_JOB_ID)\n";
    return kExitUsage;
  }
  // Where the results go, checked before the runs rather than after them (a
  // --for budget spent for nothing).
  std::string shard_file;
  if (!out_dir.empty()) {
    if (absl::Status s = PrepareOutputDir("--out", out_dir); !s.ok()) {
      err << "lockstep explore: " << s.message() << "\n";
      return kExitUsage;
    }
    shard_file = (std::filesystem::path(out_dir) /
                  faults::ShardFileName(options.shard_index, options.shard_count))
                     .string();
    if (absl::Status s = CheckOutputPath("--out", shard_file); !s.ok()) {
      err << "lockstep explore: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (!markdown.empty()) {
    if (absl::Status s = CheckOutputPath("--markdown", markdown); !s.ok()) {
      err << "lockstep explore: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep explore: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  options.jobs = ClampJobs(options.jobs, "explore", err);
  std::vector<std::string> unreadable;
  absl::StatusOr<std::vector<Scenario>> scenarios =
      faults::LoadScenarios(path, catalogue, &unreadable);
  if (!scenarios.ok()) {
    err << "lockstep explore: " << scenarios.status().message() << "\n";
    for (const std::string& u : unreadable) err << "  unreadable: " << u << "\n";
    return kExitUsage;
  }
  if (flags.WasSet("memory")) {
    absl::StatusOr<MemoryModel> model = ParseMemoryModel(memory_model);
    if (!model.ok()) {
      err << "lockstep explore: --memory: " << model.status().message() << "\n";
      return kExitUsage;
    }
    for (Scenario& s : *scenarios) s.memory = *model;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  if (!options.swarm) {
    for (const Scenario& s : *scenarios) {
      if (absl::Status st = faults::CheckFaultsFire(s, registry, options.policy); !st.ok()) {
        err << "lockstep explore: " << st.message() << "\n";
        return kExitUsage;
      }
    }
  }
  {
    SimOptions run_options;
    run_options.keep_trace = false;
    run_options.policy = options.policy;  // the estimate depends on it
    // A time-budgeted run keeps as many outcomes as it has time for; the
    // budget covers the runs at once.
    const uint64_t runs =
        timed ? static_cast<uint64_t>(options.jobs)
              : faults::ShardSize(faults::ExplorationSize(scenarios->size(), options),
                                  options.shard_index, options.shard_count);
    const uint64_t kept = runs > ~uint64_t{0} / kOutcomeBytes ? ~uint64_t{0} : runs * kOutcomeBytes;
    const uint64_t jobs =
        std::max<uint64_t>(1, std::min<uint64_t>(static_cast<uint64_t>(options.jobs), runs));
    uint64_t fit = 0;
    absl::Status st = CheckRunsFit(
        *scenarios, run_options, jobs, kept,
        absl::StrFormat("outcomes of %d runs (--seeds x scenarios)", runs), *budget, &fit);
    if (!st.ok()) {
      err << "lockstep explore: " << st.message() << "\n";
      return kExitUsage;
    }
    if (fit < jobs) {
      err << absl::StrFormat(
          "lockstep explore: %d runs at once would pass the memory budget; using --jobs %d\n", jobs,
          fit);
      options.jobs = static_cast<int>(fit);
    }
  }
  if (!shard->source.empty()) {
    err << absl::StrFormat("lockstep explore: shard %d of %d (%s)\n", options.shard_index,
                           options.shard_count, shard->source);
  }
  if (timed) {
    err << absl::StrFormat(
        "lockstep explore: root seed %d (--root-seed %d draws the same seeds again)\n",
        options.root_seed, options.root_seed);
  }
  const faults::Unreadable unreadable_entries{path, unreadable};
  if (resume) LoadRunsToResume(shard_file, *scenarios, unreadable_entries, options, err);
  // A --seeds shard that writes a result file checkpoints it while it runs
  // (a stopped file of its first runs, which --resume finishes), so that a
  // shard killed without warning loses minutes, not the shard.
  std::string checkpoint_error;
  if (!timed && !shard_file.empty()) {
    options.checkpoint = [&](std::span<const faults::SeedOutcome> first_runs) {
      faults::ExploreResult so_far;
      so_far.outcomes.assign(first_runs.begin(), first_runs.end());
      so_far.stopped = true;
      const absl::Status s = WriteOutputFile(
          shard_file,
          [&](std::ostream& o) {
            faults::WriteResultFile(o, *scenarios, options, so_far, ThisBuild(),
                                    unreadable_entries);
          },
          /*sync=*/true);
      if (!s.ok() && checkpoint_error.empty()) checkpoint_error = std::string(s.message());
    };
  }
  if (StderrIsTerminal(err)) options.progress = ProgressLine(err, options);
  // Stopped by a signal, a run with a result file keeps what finished
  // (SIGTERM: a Slurm time limit, a Kubernetes eviction).
  std::optional<StopOnSignals> stop_on_signals;
  if (timed || !shard_file.empty()) {
    stop_on_signals.emplace();
    options.stop = &stop_requested;
  }
  absl::StatusOr<faults::ExploreResult> result = faults::Explore(*scenarios, options, registry);
  stop_on_signals.reset();
  if (!checkpoint_error.empty()) {
    err << "lockstep explore: a checkpoint of the result file failed: " << checkpoint_error << "\n";
  }
  if (result.ok() && timed && stop_signal.load() != 0) {
    err << absl::StrFormat(
        "lockstep explore: stopped by %s after %d run(s); the runs that finished are kept\n",
        stop_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT", result->outcomes.size());
  }
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kInternal) {
      // A bug in lockstep (a run that did not repeat itself), not the input.
      std::vector<std::string> argv = {"lockstep", "explore"};
      argv.insert(argv.end(), args.begin(), args.end());
      return InternalError(argv, err, std::string(result.status().message()));
    }
    err << "lockstep explore: " << result.status().message() << "\n";
    return kExitUsage;
  }
  out << faults::FormatExploreSummary(*scenarios, *result, options);
  if (!markdown.empty()) {
    if (absl::Status s =
            WriteOutputFile(markdown, faults::FormatExploreMarkdown(*scenarios, *result, options));
        !s.ok()) {
      err << "lockstep explore: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (!shard_file.empty()) {
    if (absl::Status s = WriteOutputFile(
            shard_file,
            [&](std::ostream& o) {
              faults::WriteResultFile(o, *scenarios, options, *result, ThisBuild(),
                                      unreadable_entries);
            },
            /*sync=*/true);
        !s.ok()) {
      err << "lockstep explore: " << s.message() << "\n";
      return kExitUsage;
    }
    err << "lockstep explore: wrote " << shard_file << "\n";
    if (result->stopped) {
      err << absl::StrFormat(
          "lockstep explore: stopped by %s after %d of the shard's %d run(s); %s keeps them: run "
          "the same command with --resume to finish the shard\n",
          stop_signal.load() == SIGINT ? "SIGINT" : "SIGTERM", result->outcomes.size(),
          faults::ShardSize(faults::ExplorationSize(scenarios->size(), options),
                            options.shard_index, options.shard_count),
          shard_file);
      return kExitStopped;
    }
    // A shard's groups are partial: lockstep merge writes the bundles of all.
    if (options.shard_count == 1) {
      if (absl::Status s =
              WriteBundles(out_dir, "explore", ThisBuild(), *scenarios, options, *result, err);
          !s.ok()) {
        err << "lockstep explore: " << s.message() << "\n";
        return kExitUsage;
      }
    }
  }
  if (!unreadable.empty()) {
    // The readable scenarios ran; the gate still fails closed.
    err << "lockstep explore: " << faults::UnreadableMessage({path, unreadable});
    return kExitUsage;
  }
  return result->all_acceptable ? kExitOk : kExitUnexpected;
}

int RunMerge(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::vector<std::string> inputs;
  std::string markdown, bundles;
  FlagParser flags("lockstep merge");
  flags.AddPositionalList("DIR|FILE", &inputs,
                          "result files, or directories of them (lockstep explore --out DIR)");
  flags.AddString("markdown", &markdown, "also write the summary as a Markdown table here");
  flags.AddString("bundles", &bundles,
                  "write the replay bundles here (default: the first DIR, or the first file's)");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "merge", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  std::vector<std::string> files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (!std::filesystem::is_directory(in, ec)) {
      files.push_back(in);
      continue;
    }
    std::vector<std::string> found;
    std::filesystem::directory_iterator it(in, ec);
    for (const std::filesystem::directory_iterator end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (faults::IsShardFileName(name)) found.push_back(it->path().string());
    }
    if (ec) {
      err << absl::StrFormat("lockstep merge: %s: cannot list the directory (%s)\n", in,
                             ec.message());
      return kExitUsage;
    }
    if (found.empty()) {
      err << absl::StrFormat(
          "lockstep merge: %s: no shard-*-of-*.jsonl result files in it (lockstep explore --out "
          "DIR writes them)\n",
          in);
      return kExitUsage;
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  // One file named twice (a directory given as ./d and d/) is read once.
  {
    std::set<std::string> seen;
    std::erase_if(files, [&seen](const std::string& f) {
      std::error_code ec;
      const std::filesystem::path canonical = std::filesystem::weakly_canonical(f, ec);
      return !seen.insert(ec ? f : canonical.string()).second;
    });
  }
  // Where the outputs go, checked before anything is printed: a --bundles
  // folder is created. The default, the first input's folder, is written only
  // when there are failures (a clean merge of a read-only folder succeeds).
  if (!bundles.empty()) {
    if (absl::Status s = PrepareOutputDir("--bundles", bundles); !s.ok()) {
      err << "lockstep merge: " << s.message() << "\n";
      return kExitUsage;
    }
  } else {
    std::error_code ec;
    std::filesystem::path dir(inputs.front());
    if (!std::filesystem::is_directory(dir, ec)) dir = dir.parent_path();
    bundles = dir.empty() ? std::filesystem::path(".") : dir;
  }
  if (!markdown.empty()) {
    if (absl::Status s = CheckOutputPath("--markdown", markdown); !s.ok()) {
      err << "lockstep merge: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  std::vector<faults::ShardFile> shards;
  for (const std::string& f : files) {
    absl::StatusOr<faults::ShardFile> shard = faults::ReadResultFile(f);
    if (!shard.ok()) {
      err << "lockstep merge: " << shard.status().message() << "\n";
      return kExitUsage;
    }
    shards.push_back(*std::move(shard));
  }
  absl::StatusOr<faults::MergedExploration> merged = faults::MergeShards(std::move(shards));
  if (!merged.ok()) {
    err << "lockstep merge: " << merged.status().message() << "\n";
    return kExitUsage;
  }
  out << faults::FormatExploreSummary(merged->scenarios, merged->result, merged->options);
  if (!markdown.empty()) {
    if (absl::Status s = WriteOutputFile(
            markdown,
            faults::FormatExploreMarkdown(merged->scenarios, merged->result, merged->options));
        !s.ok()) {
      err << "lockstep merge: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  if (absl::Status s = WriteBundles(bundles, "merge", merged->build, merged->scenarios,
                                    merged->options, merged->result, err);
      !s.ok()) {
    err << "lockstep merge: " << s.message() << "\n";
    return kExitUsage;
  }
  if (!merged->unreadable.entries.empty()) {
    // As the unsharded exploration: the gate fails closed.
    err << "lockstep merge: " << faults::UnreadableMessage(merged->unreadable);
    return kExitUsage;
  }
  return merged->result.all_acceptable ? kExitOk : kExitUnexpected;
}

int RunReplay(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path;
  FlagParser flags("lockstep replay");
  std::string max_memory;
  flags.AddPositional(
      "REPORT", &path,
      "a JSON report (lockstep sim --report) or replay bundle (explore --out, merge)", true);
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "replay", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep replay: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<faults::ReplayFile> report = faults::ReadReplayFile(path);
  if (!report.ok()) {
    err << "lockstep replay: " << report.status().message() << "\n";
    return kExitUsage;
  }
  if (absl::Status s =
          CheckRunsFit({report->scenario}, report->options, 1, 0, "", *budget, nullptr, path);
      !s.ok()) {
    err << "lockstep replay: " << s.message() << "\n";
    return kExitUsage;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  absl::StatusOr<SimResult> r =
      faults::SimulateWithFaults(report->scenario, report->options, registry);
  if (!r.ok()) {
    // A policy or schedule this lockstep does not run, say: the file's.
    err << "lockstep replay: " << path << ": " << r.status().message() << "\n";
    return kExitUsage;
  }
  const std::string verdict(VerdictName(r->verdict));
  const std::string hash = HexHash(r->trace_hash);
  const bool same = verdict == report->verdict && hash == report->trace_hash;
  if (report->bundle) {
    out << absl::StrFormat("bundle:  %s seed %d, %s (%d failing run(s) of the exploration)\n",
                           DisplayText(report->scenario.name), report->options.seed,
                           DisplayText(report->signature), report->runs);
  }
  out << absl::StrFormat("report:  %s, trace hash %s\nreplayed: %s, trace hash %s\n%s\n",
                         report->verdict, report->trace_hash, verdict, hash,
                         same ? "reproduced" : "DIFFERENT: the run did not reproduce");
  if (!same) {
    std::string why;
    if (report->build.empty()) {
      why =
          "this lockstep does not run the recorded run the same way (another build, or an edited "
          "file)";
    } else if (report->build != ThisBuild()) {
      why = absl::StrFormat(
          "it was recorded by lockstep %s and this is lockstep %s, whose simulation may differ; "
          "replay it with the build that recorded it",
          report->build, ThisBuild());
    } else {
      why = absl::StrFormat(
          "this build of lockstep (%s) recorded it, so unless the file was edited, a run did not "
          "repeat itself: a bug in lockstep, please report it with the file",
          ThisBuild());
    }
    err << absl::StrFormat(
        "lockstep replay: %s expects %s with trace hash %s, the replay gave %s "
        "with %s: %s\n",
        path, report->verdict, report->trace_hash, verdict, hash, why);
  }
  return same ? kExitOk : kExitUnexpected;
}

int RunShrink(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path, output;
  int max_runs = 600;
  FlagParser flags("lockstep shrink");
  flags.AddPositional("REPORT", &path, "a JSON report of a failing run (lockstep sim --report)",
                      true);
  flags.AddString("out", &output, "write the shrunk scenario here (default: print it)");
  flags.AddInt("max-runs", &max_runs, "simulations to spend at most (default 600)");
  std::string max_memory;
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "shrink", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep shrink: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  absl::StatusOr<faults::ReplayFile> report = faults::ReadReplayFile(path);
  if (!report.ok()) {
    err << "lockstep shrink: " << report.status().message() << "\n";
    return kExitUsage;
  }
  // Every candidate is smaller than the report's scenario.
  SimOptions shrink_options = report->options;
  shrink_options.keep_trace = false;
  if (absl::Status s =
          CheckRunsFit({report->scenario}, shrink_options, 1, 0, "", *budget, nullptr, path);
      !s.ok()) {
    err << "lockstep shrink: " << s.message() << "\n";
    return kExitUsage;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  absl::StatusOr<faults::ShrinkResult> shrunk =
      faults::Shrink(report->scenario, report->options, registry, std::max(1, max_runs));
  if (!shrunk.ok()) {
    err << "lockstep shrink: " << path << ": " << shrunk.status().message() << "\n";
    return shrunk.status().code() == absl::StatusCode::kFailedPrecondition ? kExitUnexpected
                                                                           : kExitUsage;
  }
  const std::string yaml = ScenarioToYaml(shrunk->scenario);
  err << absl::StrFormat("shrunk %s\n  from %s\n  to   %s\n  in %d runs, keeping %s (seed %d)\n",
                         DisplayText(report->scenario.name), faults::ScenarioSize(report->scenario),
                         faults::ScenarioSize(shrunk->scenario), shrunk->runs,
                         VerdictName(shrunk->verdict), shrunk->seed);
  for (const std::string& step : shrunk->reductions) err << "  - " << step << "\n";
  if (output.empty()) {
    out << yaml;
  } else {
    if (absl::Status s = WriteOutputFile(output, yaml); !s.ok()) {
      err << "lockstep shrink: " << s.message() << "\n";
      return kExitUsage;
    }
    err << "wrote " << output << "\n";
  }
  return kExitOk;
}

int RunMutants(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path = LOCKSTEP_TOPOLOGIES_SCENARIOS, catalogue;
  uint64_t seeds = 2;
  int jobs = 1;
  FlagParser flags("lockstep mutants");
  flags.AddPositional("DIR", &path, "scenarios to run every mutant on (default: the catalogue)",
                      false);
  flags.AddUint64("seeds", &seeds, "seeds per mutant and scenario (default 2)");
  flags.AddInt("jobs", &jobs, "worker threads");
  flags.AddString("catalogue", &catalogue, "catalogue directory (hardware/, models/)");
  std::string max_memory;
  flags.AddString("max-memory", &max_memory, kMaxMemoryHelp);
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "mutants", s, flags);
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  if (seeds > 1000) {
    err << "lockstep mutants: --seeds must be in [1, 1000]\n";
    return kExitUsage;
  }
  const absl::StatusOr<MemoryBudget> budget = ResolveMemoryBudget(max_memory);
  if (!budget.ok()) {
    err << "lockstep mutants: " << budget.status().message() << "\n";
    return kExitUsage;
  }
  jobs = ClampJobs(jobs, "mutants", err);
  absl::StatusOr<std::vector<Scenario>> scenarios = faults::LoadScenarios(path, catalogue);
  if (!scenarios.ok()) {
    err << "lockstep mutants: " << scenarios.status().message() << "\n";
    return kExitUsage;
  }
  {
    SimOptions run_options;
    run_options.keep_trace = false;
    // Every mutant runs: estimated as a policy that may skip the workspace
    // vote (EstimateRunMemory counts every workspace as used).
    run_options.policy = "mutants";
    uint64_t fit = 0;
    if (absl::Status s = CheckRunsFit(*scenarios, run_options, static_cast<uint64_t>(jobs), 0, "",
                                      *budget, &fit);
        !s.ok()) {
      err << "lockstep mutants: " << s.message() << "\n";
      return kExitUsage;
    }
    jobs = static_cast<int>(std::min<uint64_t>(fit, static_cast<uint64_t>(jobs)));
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  absl::StatusOr<faults::MutantTable> table =
      faults::RunMutants(*scenarios, std::max<uint64_t>(seeds, 1), std::max(jobs, 1), registry);
  if (!table.ok()) {
    err << "lockstep mutants: " << table.status().message() << "\n";
    return kExitUsage;
  }
  out << faults::FormatMutantTable(*scenarios, *table);
  return table->detected == static_cast<int>(table->rows.size()) ? kExitOk : kExitUnexpected;
}

int RunFaults(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  FlagParser flags("lockstep faults");
  if (absl::Status s = flags.Parse(args); !s.ok()) return Usage(err, "faults", s, flags);
  out << "fault kinds (outcome the reference design must give; stage; keys besides ranks; "
         "gpu = the hardware runner injects it):\n";
  for (const faults::FaultKindInfo& k : faults::AllFaultKinds()) {
    std::vector<std::string> keys;
    for (faults::FaultKey key : k.keys) keys.emplace_back(faults::FaultKeyName(key));
    for (const faults::FaultParam& p : k.params) keys.emplace_back(p.name);
    out << absl::StrFormat("  %-30s %-9s %-11s %-3s %-32s %s\n", k.name, VerdictName(k.outcome),
                           faults::FaultStageName(k.stage), k.gpu_injectable ? "gpu" : "",
                           keys.empty() ? "-" : absl::StrJoin(keys, ","), k.summary);
  }
  out << "\nmutants (known-bad policies, --policy NAME):\n";
  for (const faults::MutantInfo& m : faults::AllMutants()) {
    out << absl::StrFormat("  %-28s %-10s %s [%s]\n", m.name, VerdictName(m.expected), m.summary,
                           m.source);
  }
  return kExitOk;
}

}  // namespace lockstep::cli
