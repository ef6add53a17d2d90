// The verbs of the `lockstep` command line. Each verb is one function taking
// its arguments (after the verb) and two streams, returning the exit code:
// 0 = outcome as expected, 1 = otherwise, 2 = bad input or usage, 3 = an
// internal error (a bug in lockstep: reported with the command to reproduce).

#ifndef LOCKSTEP_CLI_COMMANDS_H_
#define LOCKSTEP_CLI_COMMANDS_H_

#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace lockstep::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitUnexpected = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;
// explore --out stopped (a signal) before its shard's last run: its result
// file keeps the runs that finished, and --resume runs the rest.
inline constexpr int kExitStopped = 4;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(std::span<const std::string> args, std::ostream& out, std::ostream& err);
};

// Every verb, in the order `lockstep --help` lists them.
std::span<const Command> Commands();

int RunLayout(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunSim(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunExplore(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunMerge(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunReplay(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunShrink(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunMutants(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunFaults(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunHw(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunImport(std::span<const std::string> args, std::ostream& out, std::ostream& err);
int RunCheckLog(std::span<const std::string> args, std::ostream& out, std::ostream& err);

// Reports an internal error (a bug in lockstep, `what`) on `err` with the
// command line `argv` (program name first) that reproduces it; returns
// kExitInternal.
int InternalError(std::span<const std::string> argv, std::ostream& err, std::string_view what,
                  bool out_of_memory = false);

// Dispatches argv (program name first) to a verb. No exception escapes: one
// is reported on `err` as an internal error with the command line that
// reproduces it, and gives kExitInternal.
int Main(std::span<const std::string> argv, std::ostream& out, std::ostream& err);

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_COMMANDS_H_
