#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "faults/explore.h"

int main(int argc, char** argv) {
  // explore and mutants run thousands of short simulations per thread.
  lockstep::faults::RetainFreedMemoryBetweenRuns();
  // cli::Main catches what a verb throws; building the arguments is the only
  // work outside it that could (std::bad_alloc).
  try {
    std::vector<std::string> args(argv, argv + argc);
    return lockstep::cli::Main(args, std::cout, std::cerr);
  } catch (...) {
    std::cerr << "lockstep: internal error: out of memory before the command started\n";
    return lockstep::cli::kExitInternal;
  }
}
