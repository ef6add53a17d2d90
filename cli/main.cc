#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return lockstep::cli::Main(args, std::cout, std::cerr);
}
