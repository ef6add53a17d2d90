#include "cli/commands.h"

#include <array>
#include <exception>
#include <new>
#include <vector>

#include "absl/strings/str_format.h"
#include "cli/build_info.h"
#include "cli/terminal_stream.h"
#include "sim/report/display_text.h"
#include "sim/scenario/did_you_mean.h"

namespace lockstep::cli {

std::span<const Command> Commands() {
  static constexpr std::array kCommands = {
      Command{"sim", "run a scenario in the deterministic simulator and give its verdict", &RunSim},
      Command{"explore", "run many seeds of scenarios (swarm faults, PCT schedules, parallel jobs)",
              &RunExplore},
      Command{"merge", "combine the shards of an exploration (explore --out) into its summary",
              &RunMerge},
      Command{"replay", "re-run a report or replay bundle; confirm the same verdict and trace hash",
              &RunReplay},
      Command{"shrink", "reduce a failing report to the smallest scenario that still fails",
              &RunShrink},
      Command{"mutants", "run every known-bad policy and print the detection table", &RunMutants},
      Command{"faults", "list the fault kinds and mutants", &RunFaults},
      Command{"hw", "run a scenario on GPUs under mpirun (--dry-run: print the plan; --compare)",
              &RunHw},
      Command{"layout", "print the groups of a parallel layout, its workspaces and reductions",
              &RunLayout},
      Command{"import",
              "turn a deployment's launch flags (sglang.launch_server, vllm serve) into a "
              "scenario",
              &RunImport},
      Command{"check-log",
              "compare every rank's decision log and name the first call a group's members "
              "decided differently",
              &RunCheckLog},
  };
  return kCommands;
}

namespace {

void PrintHelp(std::ostream& out) {
  out << "lockstep: deterministic multi-rank simulation and fault injection for GPU all-reduce "
         "dispatch\n\nusage: lockstep <command> [args]   (lockstep <command> --help for more)\n\n"
         "commands:\n";
  for (const Command& c : Commands()) out << absl::StrFormat("  %-10s %s\n", c.name, c.summary);
  out << "\nexit codes: 0 outcome as expected, 1 otherwise, 2 bad input or usage, 3 internal "
         "error, 4 explore --out stopped before it finished (--resume finishes it)\nlockstep "
         "--version names this build\n";
}

}  // namespace

int InternalError(std::span<const std::string> argv, std::ostream& err, std::string_view what,
                  bool out_of_memory) {
  std::string command;
  // Each argument as one shell word the terminal shows as it is (control
  // characters as $'\xNN'), so that the command can be pasted back.
  for (const std::string& a : argv) {
    if (!command.empty()) command += ' ';
    command += ShellWord(a);
  }
  err << "lockstep: internal error: " << what << "\n";
  if (out_of_memory) {
    err << "  the process ran out of memory that the run's estimate did not foresee; a smaller "
           "run, or a machine with more memory, avoids it\n";
  }
  err << "  this is a bug in lockstep, not in the input: please report it with the command that "
         "reproduces it and this build, lockstep "
      << ThisBuild() << ":\n  " << command << "\n";
  return kExitInternal;
}

namespace {

int Dispatch(std::span<const std::string> argv, std::ostream& out, std::ostream& err);

}  // namespace

int Main(std::span<const std::string> argv, std::ostream& out, std::ostream& err) {
  // The one place exceptions are caught besides the boundaries with throwing
  // libraries: whatever escapes a verb is a bug, reported as one (issue 11),
  // never an abort. Messages quote outside text: they reach `err` through a
  // TerminalStream, which shows control characters instead of sending them.
  TerminalStream safe_err(err);
  try {
    return Dispatch(argv, out, safe_err);
  } catch (const std::bad_alloc& e) {
    return InternalError(argv, safe_err, absl::StrFormat("out of memory (%s)", e.what()), true);
  } catch (const std::exception& e) {
    return InternalError(argv, safe_err, e.what(), false);
  } catch (...) {
    return InternalError(argv, safe_err, "an exception of unknown type", false);
  }
}

namespace {

int Dispatch(std::span<const std::string> argv, std::ostream& out, std::ostream& err) {
  if (argv.size() < 2) {
    PrintHelp(err);
    return kExitUsage;
  }
  const std::string& verb = argv[1];
  if (verb == "--help" || verb == "-h" || verb == "help") {
    PrintHelp(out);
    return kExitOk;
  }
  if (verb == "--version" || verb == "version") {
    out << "lockstep " << ThisBuild() << "\n";
    return kExitOk;
  }
  for (const Command& c : Commands()) {
    if (c.name == verb) return c.run(argv.subspan(2), out, err);
  }
  std::vector<std::string_view> names;
  for (const Command& c : Commands()) names.push_back(c.name);
  err << "lockstep: unknown command '" << verb << "'" << DidYouMean(verb, names)
      << " (lockstep --help lists them)\n";
  return kExitUsage;
}

}  // namespace

}  // namespace lockstep::cli
