// Files lockstep writes: whole or not at all, through symbolic links, in
// place for devices, and their folders checked before a long run.

#include "cli/output_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scratch_dir.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string FreshDir(const std::string& name) {
  const std::string dir = lockstep::testing::ScratchDir() + "/output_file_test-" +
                          std::to_string(getpid()) + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Nothing but `names` in `dir`: no temporary file left beside them.
void ExpectOnly(const std::string& dir, std::set<std::string> names) {
  std::set<std::string> found;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    found.insert(e.path().filename().string());
  }
  EXPECT_EQ(found, names);
}

TEST(OutputFileTest, ReplacesAFileWholeAndLeavesNothingBeside) {
  const std::string dir = FreshDir("replace");
  const std::string path = dir + "/r.json";
  ASSERT_TRUE(WriteOutputFile(path, "old\n").ok());
  ASSERT_TRUE(WriteOutputFile(path, "new\n").ok());
  EXPECT_EQ(ReadFile(path), "new\n");
  ExpectOnly(dir, {"r.json"});
}

TEST(OutputFileTest, AWriteThatThrowsLeavesTheOldFile) {
  const std::string dir = FreshDir("throw");
  const std::string path = dir + "/r.json";
  ASSERT_TRUE(WriteOutputFile(path, "old\n").ok());
  EXPECT_THROW((void)WriteOutputFile(path,
                                     [](std::ostream& out) {
                                       out << "half";
                                       throw std::runtime_error("stopped");
                                     }),
               std::runtime_error);
  EXPECT_EQ(ReadFile(path), "old\n");
  ExpectOnly(dir, {"r.json"});
}

TEST(OutputFileTest, WritesThroughASymbolicLink) {
  const std::string dir = FreshDir("link");
  ASSERT_TRUE(WriteOutputFile(dir + "/target.json", "old\n").ok());
  fs::create_symlink("target.json", dir + "/link.json");
  ASSERT_TRUE(WriteOutputFile(dir + "/link.json", "new\n").ok());
  EXPECT_TRUE(fs::is_symlink(dir + "/link.json"));
  EXPECT_EQ(ReadFile(dir + "/target.json"), "new\n");
}

TEST(OutputFileTest, KeepsTheModeAndOtherNamesOfAFile) {
  const std::string dir = FreshDir("mode");
  const std::string path = dir + "/private.json";
  ASSERT_TRUE(WriteOutputFile(path, "old\n").ok());
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  ASSERT_TRUE(WriteOutputFile(path, "new\n").ok());
  EXPECT_EQ(fs::status(path).permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  // A second name (a hard link) sees the new contents: written in place.
  fs::create_hard_link(path, dir + "/other-name.json");
  ASSERT_TRUE(WriteOutputFile(path, "newer\n").ok());
  EXPECT_EQ(ReadFile(dir + "/other-name.json"), "newer\n");
  ExpectOnly(dir, {"private.json", "other-name.json"});
}

TEST(OutputFileTest, WritesADeviceInPlace) {
  EXPECT_TRUE(WriteOutputFile("/dev/null", "x").ok());
  const absl::Status full = WriteOutputFile("/dev/full", std::string(1 << 16, 'x'));
  EXPECT_THAT(full.message(), HasSubstr("cannot write /dev/full (No space left on device)"));
}

TEST(OutputFileTest, PathsAreCheckedBeforeARun) {
  const std::string dir = FreshDir("check");
  EXPECT_TRUE(CheckOutputPath("--markdown", dir + "/s.md").ok());
  EXPECT_THAT(CheckOutputPath("--markdown", dir).message(),
              HasSubstr("--markdown " + dir + ": it is a directory"));
  EXPECT_THAT(CheckOutputPath("--markdown", dir + "/no/s.md").message(),
              HasSubstr("the folder " + dir + "/no does not exist"));
  EXPECT_TRUE(CheckOutputPath("--report", "/dev/null").ok());
  ASSERT_TRUE(PrepareOutputDir("--out", dir + "/a/b").ok());
  EXPECT_TRUE(fs::is_directory(dir + "/a/b"));
  ASSERT_TRUE(WriteOutputFile(dir + "/f", "x").ok());
  EXPECT_THAT(PrepareOutputDir("--out", dir + "/f/x").message(),
              HasSubstr("--out " + dir + "/f/x: cannot create the directory"));
}

}  // namespace
}  // namespace lockstep::cli
