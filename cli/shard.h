// Which slice of an exploration this process runs (lockstep explore --shard),
// from the flag or from what a cluster scheduler sets, and the --for budget
// and progress line of long explorations.
//
// Where the shard comes from: the flag, else the one environment present:
//   --shard I/N                                   the flag, always
//   SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT      sbatch --array=A-B[:S]: I = (ID - MIN) / STEP,
//                                                 N = COUNT
//   SLURM_PROCID, SLURM_STEP_NUM_TASKS            srun -n T: I = PROCID, N = T; inside an array
//                                                 task, I = I_array * T + PROCID, N = N_array * T
//   JOB_COMPLETION_INDEX                          a Kubernetes Indexed Job: I; N from
//                                                 --shard-count or LOCKSTEP_SHARD_COUNT
//   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE    Open MPI's mpirun -np N: I = rank, N = size
//   PMI_RANK, PMI_SIZE                            MPICH's or Intel MPI's mpiexec, srun
//                                                 --mpi=pmi2: I = rank, N = size
// --shard-count N gives the count where the environment does not (a Slurm
// array's must agree with it). Two of these environments at once (mpirun
// inside an array task) is an error: every process would run the same shard;
// srun's PMI_RANK and PMI_SIZE (--mpi=pmi2) equal to its SLURM_PROCID and
// SLURM_STEP_NUM_TASKS are the step's numbering, not a second one.

#ifndef LOCKSTEP_CLI_SHARD_H_
#define LOCKSTEP_CLI_SHARD_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "faults/explore.h"

namespace lockstep::cli {

using faults::kMaxShards;

struct ShardSpec {
  uint64_t index = 0;
  uint64_t count = 1;
  std::string source;  // "--shard 3/7", "SLURM_ARRAY_TASK_ID=5 (MIN 2, COUNT 7)"; empty: none
};

// The value of an environment variable, or nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const char* name)>;
// The process's environment.
EnvLookup ProcessEnvironment();

// The shard from `shard_flag` ("I/N", when `shard_set`), `count_flag` (when
// `count_set`) and the environment, in the order above. No source: shard 0
// of 1. InvalidArgument names the flag or variable, its value and what to
// do: malformed numbers, I >= N, N = 0 or over kMaxShards.
absl::StatusOr<ShardSpec> ResolveShard(std::string_view shard_flag, bool shard_set,
                                       uint64_t count_flag, bool count_set, const EnvLookup& env);

// A --for budget: one or more NUMBER UNIT parts, unit s, m or h ("90s",
// "40m", "2h", "1h30m"), from 1 second to 30 days. InvalidArgument says
// what is accepted.
absl::StatusOr<std::chrono::seconds> ParseDuration(std::string_view text);

// The progress line of a long exploration after `elapsed_s` seconds: runs
// done (of the total, when known), the rate, failures so far and the time
// left (the budget's, or estimated from the rate).
std::string FormatProgress(const faults::ExploreProgress& p, double elapsed_s,
                           std::optional<double> budget_s);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_SHARD_H_
