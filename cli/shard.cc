#include "cli/shard.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/scenario/input_text.h"

namespace lockstep::cli {
namespace {

// A non-negative decimal integer, all of `text`.
std::optional<uint64_t> ParseCount(std::string_view text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// The integer value of environment variable `name`, which is set.
absl::StatusOr<uint64_t> EnvCount(const EnvLookup& env, const char* name) {
  const std::optional<std::string> value = env(name);
  if (!value) {
    return absl::InvalidArgumentError(absl::StrFormat("%s is not set", name));
  }
  const std::optional<uint64_t> v = ParseCount(*value);
  if (!v) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s=%s is not an integer >= 0; unset it, or give --shard I/N, which wins",
                        name, QuoteBytes(*value)));
  }
  return *v;
}

// MPI launchers, which give each process its rank and the number of them:
// Open MPI's mpirun; MPICH's and Intel MPI's mpiexec, and srun --mpi=pmi2.
struct MpiLauncher {
  const char* rank;
  const char* size;
  // srun sets these too (--mpi=pmi2), to its job step's own numbering.
  bool set_by_srun;
};
constexpr MpiLauncher kMpiLaunchers[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", false},
                                         {"PMI_RANK", "PMI_SIZE", true}};

// The first launcher whose rank variable is set, or null.
const MpiLauncher* MpiLauncherIn(const EnvLookup& env) {
  for (const MpiLauncher& mpi : kMpiLaunchers) {
    if (env(mpi.rank)) return &mpi;
  }
  return nullptr;
}

// A task of a Slurm job step (srun -n T): srun sets SLURM_STEP_NUM_TASKS for
// the step's tasks and SLURM_PROCID, the task's number in it. A batch script
// run by sbatch has SLURM_PROCID=0 and SLURM_NTASKS (the allocation's tasks)
// but no step of its own, so neither of those alone names a shard: a script
// that runs lockstep without srun runs the whole exploration.
struct SlurmStep {
  uint64_t task = 0;   // SLURM_PROCID
  uint64_t tasks = 1;  // SLURM_STEP_NUM_TASKS
};
absl::StatusOr<std::optional<SlurmStep>> SlurmStepIn(const EnvLookup& env) {
  if (!env("SLURM_STEP_NUM_TASKS")) return std::nullopt;
  absl::StatusOr<uint64_t> tasks = EnvCount(env, "SLURM_STEP_NUM_TASKS");
  if (!tasks.ok()) return tasks.status();
  absl::StatusOr<uint64_t> task = EnvCount(env, "SLURM_PROCID");
  if (!task.ok()) return task.status();
  if (*tasks == 0 || *task >= *tasks) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SLURM_PROCID=%d is not below SLURM_STEP_NUM_TASKS=%d; not a task of a Slurm job step",
        *task, *tasks));
  }
  return SlurmStep{*task, *tasks};
}

absl::Status CheckShard(const ShardSpec& s) {
  if (s.count == 0 || s.count > kMaxShards) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the shard count must be in [1, %d], got %d", s.source, kMaxShards, s.count));
  }
  if (s.index >= s.count) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: shard index %d is not below the count %d (shards are numbered 0 to %d%s)", s.source,
        s.index, s.count, s.count - 1,
        s.source.starts_with("SLURM") || s.source.starts_with("(SLURM")
            ? "; give sbatch one range, --array=A-B or --array=A-B:S"
            : ""));
  }
  return absl::OkStatus();
}

}  // namespace

EnvLookup ProcessEnvironment() {
  return [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe): read before threads start
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

absl::StatusOr<ShardSpec> ResolveShard(std::string_view shard_flag, bool shard_set,
                                       uint64_t count_flag, bool count_set, const EnvLookup& env) {
  ShardSpec s;
  if (shard_set) {
    if (count_set) {
      return absl::InvalidArgumentError("--shard I/N already gives the count; drop --shard-count");
    }
    const size_t slash = shard_flag.find('/');
    const std::optional<uint64_t> index =
        slash == std::string_view::npos ? std::nullopt : ParseCount(shard_flag.substr(0, slash));
    const std::optional<uint64_t> count =
        slash == std::string_view::npos ? std::nullopt : ParseCount(shard_flag.substr(slash + 1));
    if (!index || !count) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--shard expects I/N (shard I of N, 0 <= I < N), e.g. --shard 3/7; got %s",
          QuoteBytes(shard_flag)));
    }
    s.index = *index;
    s.count = *count;
    s.source = absl::StrFormat("--shard %d/%d", s.index, s.count);
    if (absl::Status st = CheckShard(s); !st.ok()) return st;
    return s;
  }
  // Each launcher variable that names a shard: more than one present means
  // processes nested in one another (mpirun inside an array task), which would
  // all run the same shard. A Slurm job step is not one of them where an
  // array task holds it (srun -n T inside the task splits the task's shard T
  // ways, below), and srun --mpi=pmi2 sets PMI_RANK and PMI_SIZE to the
  // step's own numbering.
  absl::StatusOr<std::optional<SlurmStep>> slurm_step = SlurmStepIn(env);
  if (!slurm_step.ok()) return slurm_step.status();
  std::vector<std::string> sources;
  if (env("SLURM_ARRAY_TASK_ID")) sources.push_back("SLURM_ARRAY_TASK_ID");
  if (*slurm_step && !env("SLURM_ARRAY_TASK_ID")) sources.push_back("SLURM_PROCID");
  if (env("JOB_COMPLETION_INDEX")) sources.push_back("JOB_COMPLETION_INDEX");
  for (const MpiLauncher& mpi : kMpiLaunchers) {
    if (!env(mpi.rank)) continue;
    if (*slurm_step && mpi.set_by_srun && env(mpi.rank) == std::to_string((*slurm_step)->task) &&
        env(mpi.size) == std::to_string((*slurm_step)->tasks)) {
      continue;  // srun --mpi=pmi2: the step's numbering again
    }
    sources.push_back(mpi.rank);
  }
  if (sources.size() > 1) {
    std::vector<std::string> values;
    for (const std::string& name : sources) {
      values.push_back(absl::StrFormat("%s=%s", name, QuoteBytes(*env(name.c_str()))));
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s are all set: each names a shard, and the processes of the inner launcher would all "
        "run the same one; give --shard I/N, numbering the processes across both launchers",
        absl::StrJoin(values, ", ")));
  }
  if (env("SLURM_ARRAY_TASK_ID")) {
    absl::StatusOr<uint64_t> id = EnvCount(env, "SLURM_ARRAY_TASK_ID");
    if (!id.ok()) return id.status();
    absl::StatusOr<uint64_t> min = EnvCount(env, "SLURM_ARRAY_TASK_MIN");
    if (!min.ok()) return min.status();
    if (*id < *min) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SLURM_ARRAY_TASK_ID=%d is below SLURM_ARRAY_TASK_MIN=%d; not a task of a Slurm array",
          *id, *min));
    }
    // --array=A-B:S numbers its tasks A, A+S, ...: the task's place in the
    // array is the shard.
    uint64_t step = 1;
    if (env("SLURM_ARRAY_TASK_STEP")) {
      absl::StatusOr<uint64_t> st = EnvCount(env, "SLURM_ARRAY_TASK_STEP");
      if (!st.ok()) return st.status();
      step = std::max<uint64_t>(*st, 1);
    }
    if ((*id - *min) % step != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SLURM_ARRAY_TASK_ID=%d is not SLURM_ARRAY_TASK_MIN=%d plus a multiple of "
          "SLURM_ARRAY_TASK_STEP=%d; give sbatch one range, --array=A-B or --array=A-B:S, or "
          "give --shard I/N",
          *id, *min, step));
    }
    s.index = (*id - *min) / step;
    absl::StatusOr<uint64_t> array_count = absl::NotFoundError("");
    if (env("SLURM_ARRAY_TASK_COUNT")) array_count = EnvCount(env, "SLURM_ARRAY_TASK_COUNT");
    if (array_count.status().code() == absl::StatusCode::kInvalidArgument) {
      return array_count.status();
    }
    if (count_set) {
      // The array's tasks are the shards; a count that disagrees (one task
      // of a larger exploration run again) would take the wrong shard.
      if (array_count.ok() && *array_count != count_flag) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "--shard-count %d but the Slurm array has %d task(s) (SLURM_ARRAY_TASK_COUNT): each "
            "task runs the shard of its place in the array; to run one shard again, give it "
            "as --shard I/%d (lockstep merge lists the missing ones)",
            count_flag, *array_count, count_flag));
      }
      s.count = count_flag;
    } else {
      if (!array_count.ok()) return absl::InvalidArgumentError("SLURM_ARRAY_TASK_COUNT is not set");
      s.count = *array_count;
    }
    s.source =
        step == 1
            ? absl::StrFormat("SLURM_ARRAY_TASK_ID=%d - SLURM_ARRAY_TASK_MIN=%d, %s=%d", *id, *min,
                              count_set ? "--shard-count" : "SLURM_ARRAY_TASK_COUNT", s.count)
            : absl::StrFormat(
                  "(SLURM_ARRAY_TASK_ID=%d - SLURM_ARRAY_TASK_MIN=%d) / "
                  "SLURM_ARRAY_TASK_STEP=%d, %s=%d",
                  *id, *min, step, count_set ? "--shard-count" : "SLURM_ARRAY_TASK_COUNT", s.count);
    if (*slurm_step && (*slurm_step)->tasks > 1) {
      // srun -n T inside the array task: the task's shard is T shards, one a
      // step task, numbered across the array (array task a, step task p:
      // a * T + p of A * T). A step of one task is the array task itself.
      if (absl::Status st = CheckShard(s); !st.ok()) return st;
      const uint64_t tasks = (*slurm_step)->tasks;
      if (s.count > kMaxShards / tasks) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s times SLURM_STEP_NUM_TASKS=%d is over %d shards; run fewer array tasks or "
            "fewer tasks a step",
            s.source, tasks, kMaxShards));
      }
      s.index = s.index * tasks + (*slurm_step)->task;
      s.count *= tasks;
      s.source = absl::StrFormat("(%s) * SLURM_STEP_NUM_TASKS=%d + SLURM_PROCID=%d", s.source,
                                 tasks, (*slurm_step)->task);
    }
  } else if (*slurm_step) {
    s.index = (*slurm_step)->task;
    s.count = count_set ? count_flag : (*slurm_step)->tasks;
    s.source = absl::StrFormat("SLURM_PROCID=%d, %s=%d", s.index,
                               count_set ? "--shard-count" : "SLURM_STEP_NUM_TASKS", s.count);
  } else if (env("JOB_COMPLETION_INDEX")) {
    absl::StatusOr<uint64_t> index = EnvCount(env, "JOB_COMPLETION_INDEX");
    if (!index.ok()) return index.status();
    s.index = *index;
    if (count_set) {
      s.count = count_flag;
    } else if (env("LOCKSTEP_SHARD_COUNT")) {
      absl::StatusOr<uint64_t> count = EnvCount(env, "LOCKSTEP_SHARD_COUNT");
      if (!count.ok()) return count.status();
      s.count = *count;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "JOB_COMPLETION_INDEX=%d is set (a Kubernetes Indexed Job) but not the shard count: "
          "give --shard-count N or set LOCKSTEP_SHARD_COUNT to the Job's completions",
          s.index));
    }
    s.source = absl::StrFormat("JOB_COMPLETION_INDEX=%d, %s=%d", s.index,
                               count_set ? "--shard-count" : "LOCKSTEP_SHARD_COUNT", s.count);
  } else if (const MpiLauncher* mpi = MpiLauncherIn(env)) {
    absl::StatusOr<uint64_t> rank = EnvCount(env, mpi->rank);
    if (!rank.ok()) return rank.status();
    s.index = *rank;
    if (count_set) {
      s.count = count_flag;
    } else {
      absl::StatusOr<uint64_t> size = EnvCount(env, mpi->size);
      if (!size.ok()) return size.status();
      s.count = *size;
    }
    s.source = absl::StrFormat("%s=%d, %s=%d", mpi->rank, s.index,
                               count_set ? "--shard-count" : mpi->size, s.count);
  } else if (count_set) {
    return absl::InvalidArgumentError(
        "--shard-count needs a shard index: give --shard I/N instead, or run under a Slurm "
        "array or srun, a Kubernetes Indexed Job or mpirun");
  } else {
    return s;
  }
  if (absl::Status st = CheckShard(s); !st.ok()) return st;
  return s;
}

absl::StatusOr<std::chrono::seconds> ParseDuration(std::string_view text) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--for expects a duration such as 90s, 40m, 2h or 1h30m (1 second to 30 days), got %s",
        QuoteBytes(text)));
  };
  if (text.empty() || text.size() > 32) return bad();
  uint64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t digits_end = text.find_first_not_of("0123456789", i);
    if (digits_end == i || digits_end == std::string_view::npos) return bad();
    const std::optional<uint64_t> n = ParseCount(text.substr(i, digits_end - i));
    if (!n || *n > 30ull * 24 * 3600) return bad();
    const char unit = text[digits_end];
    const uint64_t scale = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
    if (scale == 0) return bad();
    total += *n * scale;
    if (total > 30ull * 24 * 3600) return bad();
    i = digits_end + 1;
  }
  if (total == 0) return bad();
  return std::chrono::seconds(static_cast<int64_t>(total));
}

namespace {

std::string Clock(double seconds) {
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

}  // namespace

std::string FormatProgress(const faults::ExploreProgress& p, double elapsed_s,
                           std::optional<double> budget_s) {
  // The rate of the runs made here: those kept from before (--resume) took
  // no time now.
  const double rate =
      elapsed_s > 0 ? static_cast<double>(p.done - std::min(p.resumed, p.done)) / elapsed_s : 0.0;
  std::string left;
  if (budget_s) {
    left = Clock(std::max(0.0, *budget_s - elapsed_s)) + " left";
  } else if (p.done >= p.total) {
    left = "done";
  } else if (rate > 0) {
    left = "~" + Clock(static_cast<double>(p.total - p.done) / rate) + " left";
  } else {
    left = "time left unknown";
  }
  const std::string runs = p.total > 0 ? absl::StrFormat("%d/%d runs", p.done, p.total)
                                       : absl::StrFormat("%d runs", p.done);
  return absl::StrFormat("%s, %.1f runs/s, %d failure(s), %s", runs, rate, p.failures, left);
}

}  // namespace lockstep::cli
