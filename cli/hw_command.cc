// lockstep hw: a scenario on real GPUs (one process per GPU under mpirun), or
// its plan (--dry-run), or both runs compared (--compare).

#include "absl/strings/str_format.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "cli/decision_log_files.h"
#include "cli/flags.h"
#include "cli/output_file.h"
#include "faults/mutants.h"
#include "faults/runner.h"
#include "hw/hw_compare.h"
#include "hw/hw_plan.h"
#include "sim/report/report.h"
#include "sim/scenario/scenario_yaml.h"

#ifdef LOCKSTEP_HAVE_HW
#include <mpi.h>

#include "hw/hw_runner.h"
#endif

namespace lockstep::cli {

int RunHw(std::span<const std::string> args, std::ostream& out, std::ostream& err) {
  std::string path, catalogue, report_path, policy, decision_log_dir;
  uint64_t seed = 1;
  bool dry_run = false, compare = false, json = false;
  int consistency = 0;
  int64_t kernel_wait_ms = 0, watchdog_ms = 0;
  FlagParser flags("lockstep hw");
  flags.AddPositional("SCENARIO", &path, "scenario YAML file", true);
  flags.AddUint64("seed", &seed, "seed (the simulator's, for --compare and --dry-run; default 1)");
  flags.AddString("policy", &policy, "dispatch policy (default: the scenario's)");
  flags.AddString("report", &report_path, "write the JSON report here (rank 0)");
  flags.AddString("decision-log", &decision_log_dir,
                  "each rank writes its decision log (rank-<R>.jsonl) into this directory");
  flags.AddBool("dry-run", &dry_run, "print the plan (ranks, GPUs, groups, workspaces, backends)");
  flags.AddBool("compare", &compare, "also simulate the scenario and seed; any difference exits 1");
  flags.AddInt("consistency", &consistency,
               "all-gather decision fingerprints every K calls of a group (0: off)");
  flags.AddInt64("kernel-wait-ms", &kernel_wait_ms, "bounded-wait budget of the fused kernels");
  flags.AddInt64("watchdog-ms", &watchdog_ms, "NCCL and MPI watchdog timeout");
  flags.AddString("catalogue", &catalogue, "catalogue directory (hardware/, models/)");
  flags.AddBool("json", &json, "print the JSON report instead of text");
  if (absl::Status s = flags.Parse(args); !s.ok()) {
    err << "lockstep hw: " << s.message() << "\n" << flags.Usage();
    return kExitUsage;
  }
  if (flags.help_requested()) {
    out << flags.Usage();
    return kExitOk;
  }
  if (consistency < 0 || kernel_wait_ms < 0 || watchdog_ms < 0) {
    err << "lockstep hw: --consistency, --kernel-wait-ms and --watchdog-ms must be >= 0\n";
    return kExitUsage;
  }
  absl::StatusOr<Scenario> scenario = LoadScenarioFile(path, catalogue);
  if (!scenario.ok()) {
    err << "lockstep hw: " << scenario.status().message() << "\n";
    return kExitUsage;
  }
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  if (absl::Status s = faults::CheckFaultsFire(*scenario, registry, policy); !s.ok()) {
    err << "lockstep hw: " << s.message() << "\n";
    return kExitUsage;
  }
  if (dry_run) {
    absl::StatusOr<std::string> plan = hw::DescribeHwPlan(*scenario, policy, seed, registry);
    if (!plan.ok()) {
      err << "lockstep hw: " << plan.status().message() << "\n";
      return kExitUsage;
    }
    out << *plan;
    return kExitOk;
  }
#ifndef LOCKSTEP_HAVE_HW
  err << "lockstep hw: this lockstep was built without CUDA, NCCL or MPI, so it cannot run on "
         "GPUs; rebuild where nvcc, NCCL and MPI are found (--dry-run works without them)\n";
  return kExitUsage;
#else
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(nullptr, nullptr);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  hw::HwOptions options;
  options.seed = seed;
  options.policy = policy;
  options.consistency_every = consistency;
  options.kernel_wait_ms = static_cast<double>(kernel_wait_ms);
  options.watchdog_ms = static_cast<double>(watchdog_ms);
  options.keep_decision_log = !decision_log_dir.empty();
  absl::StatusOr<hw::HwResult> run = hw::RunOnHardware(*scenario, options, registry);
  if (run.ok() && !decision_log_dir.empty()) {
    if (absl::Status s = WriteDecisionLog(decision_log_dir, rank, run->decision_log); !s.ok()) {
      err << "lockstep hw: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  int code = kExitOk;
  if (!run.ok()) {
    err << absl::StrFormat("lockstep hw (rank %d): %s\n", rank, run.status().message());
    code = kExitUsage;
  } else if (rank == 0) {
    SimOptions sim_options;
    sim_options.seed = seed;
    sim_options.policy = policy;
    const nlohmann::json report = [&] {
      nlohmann::json r = MakeReport(*scenario, sim_options, run->result);
      r["lockstep"]["tool"] = "lockstep hw";
      r["lockstep"]["build"] = ThisBuild();
      r["hardware_run"] = {{"ranks", run->world}, {"workspace_sharing", run->sharing}};
      return r;
    }();
    std::vector<std::string> differences;
    if (compare) {
      SimOptions compare_options = sim_options;
      compare_options.keep_trace = true;
      absl::StatusOr<SimResult> simulated =
          faults::SimulateWithFaults(*scenario, compare_options, registry);
      if (!simulated.ok()) {
        err << "lockstep hw: simulating for --compare: " << simulated.status().message() << "\n";
        code = kExitUsage;
      } else {
        differences = hw::CompareRuns(run->result, *simulated);
      }
    }
    if (!report_path.empty()) {
      nlohmann::json r = report;
      if (compare) r["compare"] = {{"differences", differences}};
      if (absl::Status s = WriteOutputFile(report_path, r.dump(2) + "\n"); !s.ok()) {
        err << "lockstep hw: " << s.message() << "\n";
        code = kExitUsage;
      }
    }
    if (json) {
      out << report.dump(2) << "\n";
    } else {
      out << FormatResult(*scenario, sim_options, run->result);
      out << absl::StrFormat("hardware: %d ranks, workspaces shared as %s, %d dispatched calls\n",
                             run->world, run->sharing, run->result.rank_calls);
    }
    if (compare) {
      if (differences.empty()) {
        out << "compare: the simulator agrees (verdict and every dispatched call)\n";
      } else {
        out << absl::StrFormat("compare: %d difference(s) from the simulator:\n",
                               differences.size());
        for (const std::string& d : differences) out << "  " << d << "\n";
      }
    }
    if (code == kExitOk && (!AsExpected(*scenario, run->result.verdict) || !differences.empty())) {
      code = kExitUnexpected;
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!initialized) MPI_Finalize();
  return code;
#endif
}

}  // namespace lockstep::cli
