// A small command-line parser for the verbs of `lockstep`: typed flags with
// --name value / --name=value, positional arguments, and errors that name the
// flag and suggest the closest known one.

#ifndef LOCKSTEP_CLI_FLAGS_H_
#define LOCKSTEP_CLI_FLAGS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"

namespace lockstep::cli {

class FlagParser {
 public:
  // `command` is what the usage line shows ("lockstep layout").
  explicit FlagParser(std::string command);

  void AddInt(std::string name, int* out, std::string help);
  void AddInt64(std::string name, int64_t* out, std::string help);
  void AddUint64(std::string name, uint64_t* out, std::string help);
  // A bool flag: --name sets true, --name=false / --no-name set false.
  void AddBool(std::string name, bool* out, std::string help);
  void AddString(std::string name, std::string* out, std::string help);
  // Positional arguments, in order. Optional ones must come last.
  void AddPositional(std::string name, std::string* out, std::string help, bool required);
  // Every positional argument after those of AddPositional, at least one.
  void AddPositionalList(std::string name, std::vector<std::string>* out, std::string help);

  // Parses `args` (without the program and verb). InvalidArgument names the
  // offending flag or value. `--help` sets help_requested() and returns OK.
  absl::Status Parse(std::span<const std::string> args);

  bool help_requested() const { return help_requested_; }
  // Whether the named flag appeared on the command line.
  bool WasSet(std::string_view name) const;
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::variant<int*, int64_t*, uint64_t*, bool*, std::string*> out;
    std::string help;
    bool set = false;
  };
  struct Positional {
    std::string name;
    std::string* out;
    std::string help;
    bool required;
  };
  Flag* FindFlag(std::string_view name);
  absl::Status Assign(Flag& flag, std::string_view value);

  std::string command_;
  std::vector<Flag> flags_;
  std::vector<Positional> positionals_;
  struct PositionalList {
    std::string name;
    std::vector<std::string>* out = nullptr;
    std::string help;
  };
  std::optional<PositionalList> rest_;
  bool help_requested_ = false;
};

}  // namespace lockstep::cli

#endif  // LOCKSTEP_CLI_FLAGS_H_
