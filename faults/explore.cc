#include "faults/explore.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <limits>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/stable_hash.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "faults/swarm.h"
#include "sim/report/display_text.h"
#include "sim/report/report.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep::faults {
namespace {

namespace fs = std::filesystem;

// Runs independent jobs 0, 1, ... up to `count` on `jobs` threads, claiming
// them in order until `count` or, when given, until `stop()` says so (checked
// before each claim: every job claimed runs to its end). `run(i)` must only
// touch its own result. Threads that cannot be created are done without (the
// calling thread always works); an exception thrown by a job is rethrown
// here, after every thread has joined, instead of terminating the process
// from a worker (issue 11). `progress(done)` is called from a reporting
// thread while jobs finish, and once at the end.
void ParallelFor(size_t count, int jobs, const std::function<void(size_t)>& run,
                 const std::function<void(size_t)>& progress,
                 const std::function<bool()>& stop = nullptr) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::atomic<bool> abort{false};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  const int threads =
      std::max(1, std::min<int>(jobs, static_cast<int>(std::min<size_t>(count, size_t{1} << 20))));
  auto worker = [&] {
    while (!abort && !(stop && stop())) {
      const size_t i = next++;
      if (i >= count) break;
      try {
        run(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        abort = true;  // no new job starts
      }
      ++done;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // the machine will not give more threads: work with those there are
    }
  }
  std::mutex finished_mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  std::thread reporter;
  if (progress) {
    try {
      // Reports progress while the pool and the calling thread work.
      reporter = std::thread([&] {
        size_t last = ~size_t{0};
        std::unique_lock<std::mutex> lock(finished_mutex);
        while (!finished) {
          const size_t d = done.load();
          if (d != last) progress(d);
          last = d;
          finished_cv.wait_for(lock, std::chrono::milliseconds(100));
        }
      });
    } catch (const std::system_error&) {
      // No progress line; the work is the same.
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (reporter.joinable()) {
    {
      const std::lock_guard<std::mutex> lock(finished_mutex);
      finished = true;
    }
    finished_cv.notify_all();
    reporter.join();
    progress(done.load());
  }
  if (failure) std::rethrow_exception(failure);
}

bool Contains(const std::vector<Verdict>& v, Verdict x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

namespace {

// The *.yaml files under `dir`, with every entry that cannot be read noted in
// `unreadable`. std::filesystem's non-throwing overloads only: its iterators'
// operator++ throws on an unreadable entry.
void ListScenarioFiles(const fs::path& dir, int depth, std::vector<std::string>& files,
                       std::vector<std::string>& unreadable) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    unreadable.push_back(
        absl::StrFormat("%s: cannot list the directory (%s)", dir.string(), ec.message()));
    return;
  }
  for (const fs::directory_iterator end; it != end;) {
    const fs::path entry = it->path();
    std::error_code link_ec, target_ec;
    const fs::file_status link = it->symlink_status(link_ec);
    const fs::file_status target = it->status(target_ec);
    const bool yaml = entry.extension() == ".yaml";
    if (!link_ec && fs::is_directory(link)) {
      if (depth >= 64) {
        unreadable.push_back(
            absl::StrFormat("%s: more than 64 directories deep; not searched", entry.string()));
      } else {
        ListScenarioFiles(entry, depth + 1, files, unreadable);
      }
    } else if (yaml && (link_ec || target_ec)) {
      unreadable.push_back(absl::StrFormat("%s: cannot read (%s)", entry.string(),
                                           (link_ec ? link_ec : target_ec).message()));
    } else if (yaml && fs::is_regular_file(target)) {
      files.push_back(entry.string());
    } else if (yaml && !fs::is_directory(target)) {
      unreadable.push_back(absl::StrFormat(
          "%s: not a regular file (a device, FIFO, socket or dangling link)", entry.string()));
    }
    it.increment(ec);
    if (ec) {
      unreadable.push_back(absl::StrFormat("%s: listing stopped (%s)", dir.string(), ec.message()));
      return;
    }
  }
}

}  // namespace

absl::StatusOr<std::vector<Scenario>> LoadScenarios(const std::string& path,
                                                    const std::string& catalogue,
                                                    std::vector<std::string>* unreadable) {
  std::error_code ec;
  std::vector<std::string> files;
  std::vector<std::string> skipped;
  const bool directory = fs::is_directory(path, ec);
  if (directory) {
    ListScenarioFiles(path, 0, files, skipped);
    std::sort(files.begin(), files.end());
    if (files.empty() && skipped.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: no *.yaml scenarios in it", path));
    }
  } else {
    files.push_back(path);
  }
  std::vector<Scenario> scenarios;
  for (const std::string& f : files) {
    absl::StatusOr<Scenario> s = LoadScenarioFile(f, catalogue);
    // Contents that do not parse are an error; a file that cannot be read is
    // an unreadable entry (ReadInputFile never says InvalidArgument).
    if (!s.ok() && (s.status().code() == absl::StatusCode::kInvalidArgument || !directory)) {
      return s.status();
    }
    if (!s.ok()) {
      skipped.push_back(std::string(s.status().message()));
      continue;
    }
    scenarios.push_back(*std::move(s));
  }
  if (!skipped.empty() && unreadable == nullptr) {
    return absl::InvalidArgumentError(skipped.front());
  }
  if (unreadable != nullptr) *unreadable = std::move(skipped);
  if (scenarios.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: no scenario in it could be read (%s)", path,
        unreadable != nullptr && !unreadable->empty() ? unreadable->front() : "none"));
  }
  return scenarios;
}

uint64_t TimedSeed(uint64_t root_seed, uint64_t round) {
  return StableHasher(root_seed).Add(round).digest();
}

ExploreItem ItemAt(uint64_t k, size_t num_scenarios, const ExploreOptions& options) {
  if (options.budget.count() > 0) {
    const uint64_t n = std::max<uint64_t>(num_scenarios, 1);
    return {k % n, TimedSeed(options.root_seed, k / n)};
  }
  const uint64_t per = std::max<uint64_t>(options.seeds, 1);
  return {k / per, options.start + k % per};
}

uint64_t ExplorationSize(size_t num_scenarios, const ExploreOptions& options) {
  return num_scenarios * options.seeds;
}

uint64_t ShardSize(uint64_t total, uint64_t shard_index, uint64_t shard_count) {
  if (shard_count == 0 || shard_index >= total) return 0;
  return (total - shard_index - 1) / shard_count + 1;
}

uint64_t ShardOfItem(uint64_t k, size_t num_scenarios, const ExploreOptions& options) {
  const uint64_t count = std::max<uint64_t>(options.shard_count, 1);
  if (options.budget.count() > 0) return k / std::max<uint64_t>(num_scenarios, 1) % count;
  return k % count;
}

uint64_t ShardItem(uint64_t j, size_t num_scenarios, const ExploreOptions& options) {
  const uint64_t count = std::max<uint64_t>(options.shard_count, 1);
  if (options.budget.count() > 0) {
    const uint64_t n = std::max<uint64_t>(num_scenarios, 1);
    return (options.shard_index + count * (j / n)) * n + j % n;
  }
  return options.shard_index + count * j;
}

namespace {

// "moe" of "step 0 layer 3 moe": the kind of call site, the same wherever a
// bug strikes.
std::string SiteKindOf(const nlohmann::json& site) {
  if (!site.is_string()) return "";
  const std::string& text = site.get_ref<const std::string&>();
  const size_t space = text.rfind(' ');
  return space == std::string::npos ? text : text.substr(space + 1);
}

}  // namespace

std::string FailureSignature(const SimResult& result) {
  std::string sig(VerdictName(result.verdict));
  if (result.detector) absl::StrAppend(&sig, "/", std::string(DetectorOf(*result.detector).name));
  const nlohmann::json& d = result.details;
  std::string site;
  std::vector<std::string> inputs;
  if (d.is_object() && d.contains("site")) site = SiteKindOf(d["site"]);
  if (d.is_object() && d.contains("first_divergent_decision") &&
      d["first_divergent_decision"].is_object()) {
    const nlohmann::json& div = d["first_divergent_decision"];
    if (site.empty() && div.contains("site")) site = SiteKindOf(div["site"]);
    if (div.contains("sides") && div["sides"].is_array()) {
      for (const nlohmann::json& side : div["sides"]) {
        if (!side.is_object() || !side.contains("differing_inputs") ||
            !side["differing_inputs"].is_array()) {
          continue;
        }
        for (const nlohmann::json& in : side["differing_inputs"]) {
          if (!in.is_string()) continue;
          // "tokens=5", "tokens_fit not evaluated": the input's name.
          const std::string& text = in.get_ref<const std::string&>();
          inputs.push_back(text.substr(0, text.find_first_of("= ")));
        }
      }
    }
  }
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  if (!site.empty()) absl::StrAppend(&sig, " @", site);
  if (!inputs.empty()) absl::StrAppend(&sig, " inputs=", absl::StrJoin(inputs, ","));
  absl::StrAppend(&sig, " policy=", result.policy);
  return sig;
}

ExploreResult SummarizeOutcomes(const std::vector<Scenario>& scenarios,
                                std::vector<SeedOutcome> outcomes) {
  std::sort(outcomes.begin(), outcomes.end(),
            [](const SeedOutcome& a, const SeedOutcome& b) { return a.index < b.index; });
  ExploreResult result;
  result.scenarios.resize(scenarios.size());
  for (size_t k = 0; k < scenarios.size(); ++k) {
    result.scenarios[k].name = scenarios[k].name;
    result.scenarios[k].path = scenarios[k].path;
  }
  std::map<std::pair<size_t, std::string>, size_t> group_of;
  for (const SeedOutcome& o : outcomes) {
    ScenarioSummary& sum = result.scenarios[o.scenario];
    ++sum.counts[static_cast<size_t>(o.verdict)];
    if (o.acceptable) continue;
    result.all_acceptable = false;
    if (!sum.first_failure) sum.first_failure = o;
    auto [it, added] = group_of.try_emplace({o.scenario, o.signature}, result.failures.size());
    if (added) result.failures.push_back({o.scenario, o.signature, 0, o});
    FailureGroup& g = result.failures[it->second];
    ++g.runs;
    if (o.seed < g.smallest.seed) g.smallest = o;
  }
  result.outcomes = std::move(outcomes);
  return result;
}

absl::StatusOr<ExploreResult> Explore(const std::vector<Scenario>& scenarios,
                                      const ExploreOptions& options,
                                      const PolicyRegistry& registry) {
  if (!options.policy.empty() && registry.Find(options.policy) == nullptr) {
    return registry.Create(options.policy).status();
  }
  if (options.shard_count == 0 || options.shard_count > kMaxShards ||
      options.shard_index >= options.shard_count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "shard %d of %d does not exist: the count must be in [1, %d] and the index below it",
        options.shard_index, options.shard_count, kMaxShards));
  }
  const bool timed = options.budget.count() > 0;
  std::atomic<size_t> failures{0};
  // Per scenario, runs finished and how many failed: whether a run keeps its
  // decision records from the start (below).
  std::vector<std::atomic<uint64_t>> finished_runs(scenarios.size());
  std::vector<std::atomic<uint64_t>> failed_runs(scenarios.size());
  // Item k of this shard's j-th run.
  auto item_of = [&](size_t j) { return ShardItem(j, scenarios.size(), options); };
  // One run; the outcome, or the error that stopped it.
  auto run_one = [&](uint64_t k, SeedOutcome& out) -> absl::Status {
    const ExploreItem item = ItemAt(k, scenarios.size(), options);
    out.index = k;
    out.scenario = item.scenario;
    out.seed = item.seed;
    const Scenario& base = scenarios[out.scenario];
    absl::StatusOr<Scenario> s =
        options.swarm ? WithSwarmFaults(base, out.seed) : absl::StatusOr<Scenario>(base);
    if (!s.ok()) return s.status();
    SimOptions o;
    o.seed = out.seed;
    o.policy = options.policy;
    o.schedule = options.schedule;
    o.keep_trace = false;
    // Verdicts and trace hashes do not read the decision records; only a
    // failure's summary and signature do (its first divergent decision). A
    // run keeps none while its scenario's runs have mostly been acceptable,
    // and a failing run is then run again keeping them; once more than a
    // tenth of the scenario's runs have failed (a mutant, a bug that most
    // seeds find), runs keep them from the start. Which way a run goes
    // changes its cost, never its outcome (ExploreTest checks both ways).
    const uint64_t failed = failed_runs[out.scenario].load(std::memory_order_relaxed);
    o.keep_decisions = failed * 10 > finished_runs[out.scenario].load(std::memory_order_relaxed);
    absl::StatusOr<SimResult> r = SimulateWithFaults(*s, o, registry);
    if (!r.ok()) return r.status();
    out.verdict = r->verdict;
    out.trace_hash = r->trace_hash;
    out.acceptable =
        options.swarm ? Contains(AcceptableVerdicts(*s), r->verdict) : AsExpected(*s, r->verdict);
    finished_runs[out.scenario].fetch_add(1, std::memory_order_relaxed);
    if (!out.acceptable) {
      failed_runs[out.scenario].fetch_add(1, std::memory_order_relaxed);
      if (!o.keep_decisions) {
        // The same seed again with the records, to explain the failure.
        o.keep_decisions = true;
        r = SimulateWithFaults(*s, o, registry);
        if (!r.ok()) return r.status();
        if (r->verdict != out.verdict || r->trace_hash != out.trace_hash) {
          return absl::InternalError(absl::StrFormat(
              "%s seed %d ran differently when it kept its decision records (%s, trace %016x; "
              "without them %s, trace %016x): the simulator is not deterministic here, please "
              "report it",
              s->name, out.seed, VerdictName(r->verdict), r->trace_hash, VerdictName(out.verdict),
              out.trace_hash));
        }
      }
      out.summary = r->summary;
      out.policy = r->policy;
      out.signature = FailureSignature(*r);
      ++failures;
    }
    return absl::OkStatus();
  };
  std::function<void(size_t)> progress;
  std::vector<SeedOutcome> outcomes;
  if (!timed) {
    const uint64_t runs = ShardSize(ExplorationSize(scenarios.size(), options), options.shard_index,
                                    options.shard_count);
    // The runs done before (--resume) are the shard's first.
    const size_t first = options.done.size();
    if (first > runs) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%d runs were done before, but shard %d of %d has %d", first,
                          options.shard_index, options.shard_count, runs));
    }
    for (size_t j = 0; j < first; ++j) {
      if (options.done[j].index != item_of(j)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("run %d done before is item %d, not the shard's run %d (item %d)", j,
                            options.done[j].index, j, item_of(j)));
      }
    }
    outcomes.resize(runs);
    std::copy(options.done.begin(), options.done.end(), outcomes.begin());
    const size_t failed_before =
        static_cast<size_t>(std::count_if(options.done.begin(), options.done.end(),
                                          [](const SeedOutcome& o) { return !o.acceptable; }));
    std::vector<absl::Status> errors(runs);
    // Whether run j's outcome is written (release), for the checkpoints'
    // reporting thread (acquire) and the count of runs that finished.
    std::vector<std::atomic<bool>> finished(runs);
    for (size_t j = 0; j < first; ++j) finished[j].store(true, std::memory_order_relaxed);
    size_t prefix = first;  // runs [0, prefix) finished (reporting thread only)
    size_t checkpointed = first;
    auto next_checkpoint = std::chrono::steady_clock::now() + options.checkpoint_every;
    if (options.progress || options.checkpoint) {
      progress = [&](size_t done) {
        if (options.progress) {
          options.progress({first + done, runs, failed_before + failures.load(), first});
        }
        if (!options.checkpoint || std::chrono::steady_clock::now() < next_checkpoint) return;
        while (prefix < runs && finished[prefix].load(std::memory_order_acquire)) ++prefix;
        if (prefix == checkpointed || prefix == runs) return;
        // Workers write only outcomes past the prefix: these stay as read.
        const auto start = std::chrono::steady_clock::now();
        options.checkpoint(std::span<const SeedOutcome>(outcomes.data(), prefix));
        const auto end = std::chrono::steady_clock::now();
        checkpointed = prefix;
        next_checkpoint = end + std::max<std::chrono::steady_clock::duration>(
                                    options.checkpoint_every, 50 * (end - start));
      };
    }
    ParallelFor(
        runs - first, options.jobs,
        [&](size_t i) {
          const size_t j = first + i;
          errors[j] = run_one(item_of(j), outcomes[j]);
          finished[j].store(true, std::memory_order_release);
        },
        progress, [&] { return options.stop != nullptr && options.stop->load(); });
    for (const absl::Status& e : errors) {
      if (!e.ok()) return e;
    }
    // Runs are claimed in order and every claimed run finished: those that
    // ran are the shard's first.
    size_t ran = first;
    while (ran < runs && finished[ran].load(std::memory_order_relaxed)) ++ran;
    outcomes.resize(ran);
    ExploreResult result = SummarizeOutcomes(scenarios, std::move(outcomes));
    result.stopped = ran < runs;
    return result;
  }
  // Time-budgeted: runs in item order until the time is up; each run claimed
  // before then finishes and is kept.
  if (options.progress) {
    progress = [&](size_t done) { options.progress({done, 0, failures.load()}); };
  }
  const auto deadline = std::chrono::steady_clock::now() + options.budget;
  // The shard's runs whose item numbers fit in 64 bits: its rounds up to the
  // last whole one, every scenario of each (no budget comes near the bound).
  const uint64_t n = std::max<uint64_t>(scenarios.size(), 1);
  const uint64_t last_round = (~uint64_t{0} - (n - 1)) / n;
  const uint64_t rounds = last_round < options.shard_index
                              ? 0
                              : (last_round - options.shard_index) / options.shard_count;
  const size_t count = rounds >= std::numeric_limits<size_t>::max() / n
                           ? std::numeric_limits<size_t>::max()
                           : rounds * n;
  std::mutex mutex;
  absl::Status error;
  uint64_t error_index = ~uint64_t{0};
  std::atomic<bool> failed_to_run{false};
  ParallelFor(
      count, options.jobs,
      [&](size_t j) {
        SeedOutcome out;
        const absl::Status s = run_one(item_of(j), out);
        const std::lock_guard<std::mutex> lock(mutex);
        if (!s.ok()) {
          if (out.index < error_index) {
            error = s;
            error_index = out.index;
          }
          failed_to_run = true;
          return;
        }
        outcomes.push_back(std::move(out));
      },
      progress,
      [&] {
        return std::chrono::steady_clock::now() >= deadline ||
               (options.stop_on_failure && failures.load() > 0) || failed_to_run.load() ||
               (options.stop != nullptr && options.stop->load());
      });
  if (!error.ok()) return error;
  if (options.stop_on_failure) {
    // Every item before the first failure was claimed before it and ran: the
    // prefix up to it is the same whatever --jobs and the machine's speed.
    uint64_t first = ~uint64_t{0};
    for (const SeedOutcome& o : outcomes) {
      if (!o.acceptable) first = std::min(first, o.index);
    }
    std::erase_if(outcomes, [first](const SeedOutcome& o) { return o.index > first; });
  }
  return SummarizeOutcomes(scenarios, std::move(outcomes));
}

std::string ReplayCommand(const Scenario& scenario, const SeedOutcome& outcome,
                          const ExploreOptions& options) {
  std::string cmd =
      absl::StrFormat("lockstep sim %s --seed %d", ShellWord(scenario.path), outcome.seed);
  if (options.swarm) absl::StrAppend(&cmd, " --swarm");
  // The policy and schedule are names this build accepts, or whatever a shard
  // file merged from elsewhere says: quoted like the path.
  if (!options.policy.empty()) absl::StrAppend(&cmd, " --policy ", ShellWord(options.policy));
  if (options.schedule != "random") {
    absl::StrAppend(&cmd, " --schedule ", ShellWord(options.schedule));
  }
  if (scenario.memory == MemoryModel::kRelaxed) absl::StrAppend(&cmd, " --memory relaxed");
  absl::StrAppend(&cmd, " --report failure.json");
  return cmd;
}

namespace {

std::string CountsText(const ScenarioSummary& s) {
  std::vector<std::string> parts;
  for (int v = 0; v < kNumVerdicts; ++v) {
    if (s.counts[static_cast<size_t>(v)] > 0) {
      parts.push_back(absl::StrFormat("%s %d", VerdictName(static_cast<Verdict>(v)),
                                      s.counts[static_cast<size_t>(v)]));
    }
  }
  return absl::StrJoin(parts, ", ");
}

// "40m", "90s", "2h": a budget as --for takes it.
std::string BudgetText(std::chrono::seconds budget) {
  const int64_t s = budget.count();
  if (s % 3600 == 0) return absl::StrFormat("%dh", s / 3600);
  if (s % 60 == 0) return absl::StrFormat("%dm", s / 60);
  return absl::StrFormat("%ds", s);
}

// What was explored, for the summary's first line.
std::string ExplorationText(size_t num_scenarios, const ExploreResult& result,
                            const ExploreOptions& options) {
  if (options.budget.count() > 0) {
    return absl::StrFormat(
        "%d scenario(s), %d run(s) of random seeds from root seed %d (--for %s%s)", num_scenarios,
        result.outcomes.size(), options.root_seed, BudgetText(options.budget),
        options.stop_on_failure ? ", stopping at the first failure" : "");
  }
  return absl::StrFormat("%d scenario(s) x %d seed(s) from seed %d", num_scenarios, options.seeds,
                         options.start);
}

}  // namespace

std::string FormatExploreSummary(const std::vector<Scenario>& scenarios,
                                 const ExploreResult& result, const ExploreOptions& options) {
  std::string out = absl::StrFormat(
      "%s%s, policy %s, schedule %s\n", ExplorationText(scenarios.size(), result, options),
      options.swarm ? ", swarm faults" : "",
      options.policy.empty() ? "as declared" : DisplayText(options.policy),
      DisplayText(options.schedule));
  if (options.shard_count > 1) {
    absl::StrAppendFormat(
        &out, "shard %d of %d: %d run(s), %s %d = %d; lockstep merge combines the shards\n",
        options.shard_index, options.shard_count, result.outcomes.size(),
        options.budget.count() > 0 ? "every scenario of the rounds r with r mod"
                                   : "items k with k mod",
        options.shard_count, options.shard_index);
  }
  if (result.stopped) {
    absl::StrAppendFormat(
        &out, "STOPPED after %d of %d run(s): the counts below are of those (--resume finishes)\n",
        result.outcomes.size(),
        ShardSize(ExplorationSize(scenarios.size(), options), options.shard_index,
                  options.shard_count));
  }
  absl::StrAppend(&out, "\n");
  // Names as they show (DisplayText), padded by code points (DisplayWidth).
  size_t width = 8;
  std::vector<size_t> widths;
  for (const Scenario& s : scenarios) {
    widths.push_back(DisplayWidth(s.name));
    width = std::max(width, widths.back());
  }
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const ScenarioSummary& s = result.scenarios[k];
    absl::StrAppendFormat(&out, "  %s%s  %s  %s\n", DisplayText(s.name),
                          std::string(width - widths[k], ' '), s.first_failure ? "FAIL" : "ok  ",
                          CountsText(s));
  }
  if (!result.failures.empty()) {
    absl::StrAppendFormat(&out, "\nfailures by signature (%d), each with its smallest seed:\n",
                          result.failures.size());
  }
  for (const FailureGroup& g : result.failures) {
    absl::StrAppendFormat(&out, "  %s: %s\n    %d run(s), smallest seed %d: %s\n    replay: %s\n",
                          DisplayText(scenarios[g.scenario].name), DisplayText(g.signature), g.runs,
                          g.smallest.seed, DisplayText(g.smallest.summary),
                          ReplayCommand(scenarios[g.scenario], g.smallest, options));
  }
  absl::StrAppendFormat(&out, "\n%s\n",
                        result.all_acceptable ? "every run gave an acceptable verdict"
                                              : "SOME RUNS GAVE A SILENT OR UNEXPECTED VERDICT");
  return out;
}

std::string FormatExploreMarkdown(const std::vector<Scenario>& scenarios,
                                  const ExploreResult& result, const ExploreOptions& options) {
  std::string out = absl::StrFormat("### lockstep explore: %s%s\n\n",
                                    ExplorationText(scenarios.size(), result, options),
                                    options.swarm ? ", swarm faults" : "");
  if (result.stopped) {
    absl::StrAppendFormat(&out,
                          "**Stopped** after %d of %d run(s): the counts below are of those.\n\n",
                          result.outcomes.size(),
                          ShardSize(ExplorationSize(scenarios.size(), options), options.shard_index,
                                    options.shard_count));
  }
  absl::StrAppend(&out, "| scenario | result |");
  for (int v = 0; v < kNumVerdicts; ++v) {
    absl::StrAppendFormat(&out, " %s |", VerdictName(static_cast<Verdict>(v)));
  }
  absl::StrAppend(&out, " first failing seed |\n|---|---|");
  for (int v = 0; v <= kNumVerdicts; ++v) absl::StrAppend(&out, "---|");
  absl::StrAppend(&out, "\n");
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const ScenarioSummary& s = result.scenarios[k];
    absl::StrAppendFormat(&out, "| %s | %s |", MarkdownCode(s.name), s.first_failure ? "❌" : "✅");
    for (int v = 0; v < kNumVerdicts; ++v) {
      absl::StrAppendFormat(&out, " %d |", s.counts[static_cast<size_t>(v)]);
    }
    if (s.first_failure) {
      absl::StrAppendFormat(&out, " %s |\n",
                            MarkdownCode(ReplayCommand(scenarios[k], *s.first_failure, options)));
    } else {
      absl::StrAppend(&out, " |\n");
    }
  }
  if (!result.failures.empty()) {
    absl::StrAppend(&out,
                    "\n| failure signature | scenario | runs | smallest seed | replay |\n"
                    "|---|---|---|---|---|\n");
  }
  for (const FailureGroup& g : result.failures) {
    absl::StrAppendFormat(&out, "| %s | %s | %d | %d | %s |\n", MarkdownCode(g.signature),
                          MarkdownCode(scenarios[g.scenario].name), g.runs, g.smallest.seed,
                          MarkdownCode(ReplayCommand(scenarios[g.scenario], g.smallest, options)));
  }
  return out;
}

absl::StatusOr<MutantTable> RunMutants(const std::vector<Scenario>& scenarios, uint64_t seeds,
                                       int jobs, const PolicyRegistry& registry) {
  MutantTable table;
  for (const MutantInfo& m : AllMutants()) {
    MutantRow row;
    row.mutant = std::string(m.name);
    row.source = std::string(m.source);
    row.silent.assign(scenarios.size(), std::nullopt);
    table.rows.push_back(std::move(row));
  }
  const size_t per_row = scenarios.size() * seeds;
  std::vector<std::optional<Verdict>> verdicts(table.rows.size() * per_row);
  std::vector<absl::Status> errors(verdicts.size());
  ParallelFor(
      verdicts.size(), jobs,
      [&](size_t i) {
        const size_t row = i / per_row;
        const size_t scenario = (i % per_row) / seeds;
        SimOptions o;
        o.seed = 1 + (i % seeds);
        o.policy = table.rows[row].mutant;
        o.keep_trace = false;
        o.keep_decisions = false;  // the table reads verdicts only
        absl::StatusOr<SimResult> r = SimulateWithFaults(scenarios[scenario], o, registry);
        if (!r.ok()) {
          errors[i] = r.status();
          return;
        }
        verdicts[i] = r->verdict;
      },
      nullptr);
  for (const absl::Status& e : errors) {
    if (!e.ok()) return e;
  }
  for (size_t i = 0; i < verdicts.size(); ++i) {
    const size_t row = i / per_row;
    const size_t scenario = (i % per_row) / seeds;
    if (verdicts[i] && IsSilentFailure(*verdicts[i]) && !table.rows[row].silent[scenario]) {
      table.rows[row].silent[scenario] = verdicts[i];
    }
  }
  for (MutantRow& row : table.rows) {
    row.detected = std::any_of(row.silent.begin(), row.silent.end(),
                               [](const auto& v) { return v.has_value(); });
    table.detected += row.detected ? 1 : 0;
  }
  return table;
}

std::string FormatMutantTable(const std::vector<Scenario>& scenarios, const MutantTable& table) {
  std::string out =
      absl::StrFormat("%d mutant(s) x %d scenario(s)\n\n", table.rows.size(), scenarios.size());
  for (const MutantRow& row : table.rows) {
    std::vector<std::string> hits;
    for (size_t k = 0; k < scenarios.size(); ++k) {
      if (row.silent[k]) {
        hits.push_back(absl::StrFormat("%s -> %s", DisplayText(scenarios[k].name),
                                       VerdictName(*row.silent[k])));
      }
    }
    absl::StrAppendFormat(&out, "%s %s  (%s)\n", row.detected ? "detected    " : "NOT DETECTED",
                          row.mutant, row.source);
    for (const std::string& h : hits) absl::StrAppendFormat(&out, "      %s\n", h);
  }
  absl::StrAppendFormat(&out, "\nmutation score: %d/%d = %.0f%%\n", table.detected,
                        table.rows.size(), 100.0 * table.score());
  return out;
}

void RetainFreedMemoryBetweenRuns() {
#if defined(__GLIBC__)
  // 32 MiB is the largest mmap threshold glibc accepts on 64-bit targets
  // (HEAP_MAX_SIZE / 2); blocks above it are still mapped and unmapped.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

}  // namespace lockstep::faults
