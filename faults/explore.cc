#include "faults/explore.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "faults/fault_kinds.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "faults/swarm.h"
#include "sim/report/report.h"
#include "sim/scenario/scenario_yaml.h"

namespace lockstep::faults {
namespace {

namespace fs = std::filesystem;

// Runs `count` independent jobs on `jobs` threads; `run(i)` must only touch
// its own result slot. Threads that cannot be created are done without (the
// calling thread always works); an exception thrown by a job is rethrown here,
// after every thread has joined, instead of terminating the process from a
// worker (issue 11).
void ParallelFor(size_t count, int jobs, const std::function<void(size_t)>& run,
                 const std::function<void(size_t, size_t)>& progress) {
  std::atomic<size_t> next{0};
  std::atomic<size_t> done{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  const int threads =
      std::max(1, std::min<int>(jobs, static_cast<int>(std::min<size_t>(count, size_t{1} << 20))));
  auto worker = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        run(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = count;  // no new job starts
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
  std::thread reporter;
  if (progress) {
    try {
      // Reports progress while the pool and the calling thread work.
      reporter = std::thread([&] {
        size_t last = ~size_t{0};
        while (true) {
          const size_t d = std::min(done.load(), count);
          if (d != last) progress(d, count);
          last = d;
          if (d == count) break;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      });
    } catch (const std::system_error&) {
      // No progress line; the work is the same.
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (reporter.joinable()) {
    done = count;
    reporter.join();
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

absl::StatusOr<ExploreResult> Explore(const std::vector<Scenario>& scenarios,
                                      const ExploreOptions& options,
                                      const PolicyRegistry& registry) {
  if (!options.policy.empty() && registry.Find(options.policy) == nullptr) {
    return registry.Create(options.policy).status();
  }
  const size_t per = static_cast<size_t>(options.seeds);
  ExploreResult result;
  result.outcomes.resize(scenarios.size() * per);
  std::vector<absl::Status> errors(result.outcomes.size());
  ParallelFor(
      result.outcomes.size(), options.jobs,
      [&](size_t i) {
        SeedOutcome& out = result.outcomes[i];
        out.scenario = i / per;
        out.seed = options.start + i % per;
        const Scenario& base = scenarios[out.scenario];
        absl::StatusOr<Scenario> s =
            options.swarm ? WithSwarmFaults(base, out.seed) : absl::StatusOr<Scenario>(base);
        if (!s.ok()) {
          errors[i] = s.status();
          return;
        }
        SimOptions o;
        o.seed = out.seed;
        o.policy = options.policy;
        o.schedule = options.schedule;
        o.keep_trace = false;
        absl::StatusOr<SimResult> r = SimulateWithFaults(*s, o, registry);
        if (!r.ok()) {
          errors[i] = r.status();
          return;
        }
        out.verdict = r->verdict;
        out.summary = r->summary;
        out.faults = s->faults;
        out.trace_hash = r->trace_hash;
        out.acceptable = options.swarm ? Contains(AcceptableVerdicts(*s), r->verdict)
                                       : AsExpected(*s, r->verdict);
      },
      options.progress);
  for (const absl::Status& e : errors) {
    if (!e.ok()) return e;
  }
  result.scenarios.resize(scenarios.size());
  for (size_t k = 0; k < scenarios.size(); ++k) {
    result.scenarios[k].name = scenarios[k].name;
    result.scenarios[k].path = scenarios[k].path;
  }
  for (const SeedOutcome& o : result.outcomes) {
    ScenarioSummary& sum = result.scenarios[o.scenario];
    ++sum.counts[static_cast<size_t>(o.verdict)];
    if (!o.acceptable) {
      result.all_acceptable = false;
      if (!sum.first_failure) sum.first_failure = o;
    }
  }
  return result;
}

std::string ReplayCommand(const Scenario& scenario, const SeedOutcome& outcome,
                          const ExploreOptions& options) {
  std::string cmd = absl::StrFormat("lockstep sim %s --seed %d", scenario.path, outcome.seed);
  if (options.swarm) absl::StrAppend(&cmd, " --swarm");
  if (!options.policy.empty()) absl::StrAppend(&cmd, " --policy ", options.policy);
  if (options.schedule != "random") absl::StrAppend(&cmd, " --schedule ", options.schedule);
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

}  // namespace

std::string FormatExploreSummary(const std::vector<Scenario>& scenarios,
                                 const ExploreResult& result, const ExploreOptions& options) {
  std::string out = absl::StrFormat(
      "%d scenario(s) x %d seed(s) from seed %d%s, policy %s, schedule %s\n\n", scenarios.size(),
      options.seeds, options.start, options.swarm ? ", swarm faults" : "",
      options.policy.empty() ? "as declared" : options.policy, options.schedule);
  size_t width = 8;
  for (const Scenario& s : scenarios) width = std::max(width, s.name.size());
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const ScenarioSummary& s = result.scenarios[k];
    absl::StrAppendFormat(&out, "  %-*s  %s  %s\n", static_cast<int>(width), s.name,
                          s.first_failure ? "FAIL" : "ok  ", CountsText(s));
  }
  bool any = false;
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const ScenarioSummary& s = result.scenarios[k];
    if (!s.first_failure) continue;
    if (!any) absl::StrAppend(&out, "\nfirst failing seed per scenario:\n");
    any = true;
    absl::StrAppendFormat(&out, "  %s seed %d: %s\n    %s\n    replay: %s\n", s.name,
                          s.first_failure->seed, VerdictName(s.first_failure->verdict),
                          s.first_failure->summary,
                          ReplayCommand(scenarios[k], *s.first_failure, options));
  }
  absl::StrAppendFormat(&out, "\n%s\n",
                        result.all_acceptable ? "every run gave an acceptable verdict"
                                              : "SOME RUNS GAVE A SILENT OR UNEXPECTED VERDICT");
  return out;
}

std::string FormatExploreMarkdown(const std::vector<Scenario>& scenarios,
                                  const ExploreResult& result, const ExploreOptions& options) {
  std::string out = absl::StrFormat(
      "### lockstep explore: %d scenario(s) x %d seed(s)%s\n\n| scenario | result |",
      scenarios.size(), options.seeds, options.swarm ? ", swarm faults" : "");
  for (int v = 0; v < kNumVerdicts; ++v) {
    absl::StrAppendFormat(&out, " %s |", VerdictName(static_cast<Verdict>(v)));
  }
  absl::StrAppend(&out, " first failing seed |\n|---|---|");
  for (int v = 0; v <= kNumVerdicts; ++v) absl::StrAppend(&out, "---|");
  absl::StrAppend(&out, "\n");
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const ScenarioSummary& s = result.scenarios[k];
    absl::StrAppendFormat(&out, "| `%s` | %s |", s.name, s.first_failure ? "❌" : "✅");
    for (int v = 0; v < kNumVerdicts; ++v) {
      absl::StrAppendFormat(&out, " %d |", s.counts[static_cast<size_t>(v)]);
    }
    if (s.first_failure) {
      absl::StrAppendFormat(&out, " `%s` |\n",
                            ReplayCommand(scenarios[k], *s.first_failure, options));
    } else {
      absl::StrAppend(&out, " |\n");
    }
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
        hits.push_back(absl::StrFormat("%s -> %s", scenarios[k].name, VerdictName(*row.silent[k])));
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

}  // namespace lockstep::faults
