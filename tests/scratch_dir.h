// A scratch directory for tests that write files: under GoogleTest's
// TempDir() and named after the user, so that a user running the tests
// after another (a shared /tmp on a CI host, root then a sudo user) never
// meets files it may not replace.

#ifndef LOCKSTEP_TESTS_SCRATCH_DIR_H_
#define LOCKSTEP_TESTS_SCRATCH_DIR_H_

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace lockstep::testing {

// TempDir()/lockstep-<uid>, created on first use.
inline std::string ScratchDir() {
  const std::string dir = ::testing::TempDir() + "/lockstep-" + std::to_string(getuid());
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace lockstep::testing

#endif  // LOCKSTEP_TESTS_SCRATCH_DIR_H_
