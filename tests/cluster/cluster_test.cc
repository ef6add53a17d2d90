// The cluster recipes of docs/CLUSTER.md (tools/cluster/), run as far as a
// machine without Slurm or Kubernetes allows: the sbatch script's body with
// the SLURM_* variables Slurm would set, the Indexed Job's manifest parsed
// and its container command run with JOB_COMPLETION_INDEX set, and the MPI
// script under mpirun where there is one; the shards merged must give what
// one unsharded exploration gives.

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/scratch_dir.h"
#include "yaml-cpp/yaml.h"

namespace lockstep {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kSource = LOCKSTEP_SOURCE_DIR;
const std::string kCli = LOCKSTEP_CLI;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `command` under /bin/sh; its exit status.
int Shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string FreshDir(const std::string& name) {
  const std::string dir = lockstep::testing::ScratchDir() + "/cluster_test/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Two small scenarios and a mutant that breaks one: failures to group.
const char kScenarios[] = "tp4-ep2-qwen3-h200.yaml";
std::string ExploreArgs() {
  return absl::StrCat("--seeds 5 --policy no-hybrid-fusion-gate --catalogue ", kSource,
                      "/topologies");
}
std::string Scenario() { return absl::StrCat(kSource, "/topologies/scenarios/", kScenarios); }

// What one unsharded exploration prints.
std::string Unsharded(const std::string& dir) {
  const std::string out = dir + "/unsharded.txt";
  Shell(
      absl::StrCat(kCli, " explore ", Scenario(), " ", ExploreArgs(), " > ", out, " 2>/dev/null"));
  return ReadFile(out);
}

std::string Merge(const std::string& results, const std::string& dir, int* code) {
  const std::string out = dir + "/merged.txt";
  *code = Shell(absl::StrCat(kCli, " merge ", results, " > ", out, " 2>", dir, "/merge.err"));
  return ReadFile(out);
}

TEST(ClusterTest, TheSbatchScriptsBodyRunsOneShardPerArrayTask) {
  const std::string script = kSource + "/tools/cluster/explore.sbatch";
  const std::string text = ReadFile(script);
  EXPECT_THAT(text, HasSubstr("#SBATCH --array=0-15\n"));
  const std::string dir = FreshDir("sbatch");
  // An array 4-6 (three tasks, not starting at 0), as Slurm would set it.
  for (int task = 4; task <= 6; ++task) {
    const int code = Shell(absl::StrFormat(
        "cd %s && SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=%d SLURM_ARRAY_TASK_MIN=4 "
        "SLURM_ARRAY_TASK_COUNT=3 SLURM_CPUS_PER_TASK=1 LOCKSTEP=%s SCENARIOS=%s "
        "EXPLORE_ARGS='%s' bash %s > task%d.log 2>&1",
        dir, task, kCli, Scenario(), ExploreArgs(), script, task));
    // The shard found failures (exit 1): the task still succeeds.
    EXPECT_EQ(code, 0) << ReadFile(absl::StrFormat("%s/task%d.log", dir, task));
  }
  EXPECT_TRUE(fs::exists(dir + "/results/explore-77/shard-0002-of-0003.jsonl"));
  // Task 5 requeued after a SIGTERM that left the first of its two runs: it
  // finishes the shard (--resume) instead of starting over.
  const std::string file = dir + "/results/explore-77/shard-0001-of-0003.jsonl";
  const std::string complete = ReadFile(file);
  size_t end = 0;
  for (int line = 0; line < 2; ++line) end = complete.find('\n', end) + 1;
  std::ofstream(file) << complete.substr(0, end) << R"({"end":{"runs":1,"stopped":true}})"
                      << "\n";
  const int again = Shell(absl::StrFormat(
      "cd %s && SLURM_ARRAY_JOB_ID=77 SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 "
      "SLURM_ARRAY_TASK_COUNT=3 LOCKSTEP=%s SCENARIOS=%s EXPLORE_ARGS='%s' bash %s > again.log "
      "2>&1",
      dir, kCli, Scenario(), ExploreArgs(), script));
  EXPECT_EQ(again, 0) << ReadFile(dir + "/again.log");
  EXPECT_THAT(ReadFile(dir + "/again.log"),
              HasSubstr("holds 1 of the shard's 2 run(s); running the rest"));
  EXPECT_EQ(ReadFile(file), complete);
  int code = 0;
  const std::string merged = Merge(dir + "/results/explore-77", dir, &code);
  EXPECT_EQ(code, 1) << ReadFile(dir + "/merge.err");
  EXPECT_EQ(merged, Unsharded(dir));
  EXPECT_THAT(merged, HasSubstr("5 run(s), smallest seed 1"));
  // A --for shard has nothing to resume: the script does not ask.
  const int timed = Shell(absl::StrFormat(
      "cd %s && SLURM_ARRAY_JOB_ID=78 SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_MIN=0 "
      "SLURM_ARRAY_TASK_COUNT=1 LOCKSTEP=%s SCENARIOS=%s EXPLORE_ARGS='--for 1s --catalogue "
      "%s/topologies' bash %s > timed.log 2>&1",
      dir, kCli, Scenario(), kSource, script));
  EXPECT_EQ(timed, 0) << ReadFile(dir + "/timed.log");
}

TEST(ClusterTest, TheIndexedJobManifestRunsOneShardPerCompletionIndex) {
  const YAML::Node job = YAML::LoadFile(kSource + "/tools/cluster/explore-job.yaml");
  EXPECT_EQ(job["apiVersion"].as<std::string>(), "batch/v1");
  EXPECT_EQ(job["kind"].as<std::string>(), "Job");
  const YAML::Node spec = job["spec"];
  EXPECT_EQ(spec["completionMode"].as<std::string>(), "Indexed");
  const int shards = spec["completions"].as<int>();
  EXPECT_EQ(spec["parallelism"].as<int>(), shards);
  EXPECT_EQ(spec["template"]["spec"]["restartPolicy"].as<std::string>(), "Never");
  const YAML::Node container = spec["template"]["spec"]["containers"][0];
  std::string count;
  for (const YAML::Node& e : container["env"]) {
    if (e["name"].as<std::string>() == "LOCKSTEP_SHARD_COUNT") count = e["value"].as<std::string>();
  }
  EXPECT_EQ(count, std::to_string(shards));
  const YAML::Node command = container["command"];
  ASSERT_EQ(command.size(), 3u);
  EXPECT_EQ(command[0].as<std::string>(), "/bin/sh");
  EXPECT_EQ(command[1].as<std::string>(), "-c");
  const std::string body = command[2].as<std::string>();
  EXPECT_THAT(body, HasSubstr("build/bin/lockstep}\" explore"));
  EXPECT_THAT(body, HasSubstr("--out"));
  EXPECT_THAT(body, HasSubstr("resume=\"--resume\""));
  // Evictions and preemptions retry the shard without counting against
  // backoffLimit (its retry resumes the result file).
  const YAML::Node ignore = spec["podFailurePolicy"]["rules"][1];
  EXPECT_EQ(ignore["action"].as<std::string>(), "Ignore");
  EXPECT_EQ(ignore["onPodConditions"][0]["type"].as<std::string>(), "DisruptionTarget");
  // Exit 2 (bad input) and 3 (a bug) fail the Job at once.
  const YAML::Node rule = spec["podFailurePolicy"]["rules"][0];
  EXPECT_EQ(rule["action"].as<std::string>(), "FailJob");
  EXPECT_EQ(rule["onExitCodes"]["values"].as<std::vector<int>>(), (std::vector<int>{2, 3}));

  // The container's command, three pods of a 3-completion Job.
  const std::string dir = FreshDir("k8s");
  std::ofstream(dir + "/command.sh") << body;
  for (int index = 0; index < 3; ++index) {
    const int code = Shell(absl::StrFormat(
        "cd %s && JOB_COMPLETION_INDEX=%d LOCKSTEP_SHARD_COUNT=3 LOCKSTEP=%s SCENARIOS=%s "
        "EXPLORE_ARGS='%s' OUT=%s/results /bin/sh command.sh > pod%d.log 2>&1",
        dir, index, kCli, Scenario(), ExploreArgs(), dir, index));
    EXPECT_EQ(code, 0) << ReadFile(absl::StrFormat("%s/pod%d.log", dir, index));
  }
  int code = 0;
  const std::string merged = Merge(dir + "/results", dir, &code);
  EXPECT_EQ(code, 1) << ReadFile(dir + "/merge.err");
  EXPECT_EQ(merged, Unsharded(dir));
}

TEST(ClusterTest, TheMpirunScriptRunsOneShardPerRank) {
#ifndef LOCKSTEP_MPIRUN
  GTEST_SKIP() << "no mpirun found at configure time";
#else
  const std::string dir = FreshDir("mpirun");
  // Open MPI's flags: root in containers, more ranks than cores.
  const int code = Shell(absl::StrFormat(
      "cd %s && LOCKSTEP=%s SCENARIOS=%s EXPLORE_ARGS='%s' OUT=%s/results %s --allow-run-as-root "
      "--oversubscribe -np 3 %s/tools/cluster/explore-mpi.sh > mpirun.log 2>&1",
      dir, kCli, Scenario(), ExploreArgs(), dir, LOCKSTEP_MPIRUN, kSource));
  EXPECT_EQ(code, 0) << ReadFile(dir + "/mpirun.log");
  int merge_code = 0;
  const std::string merged = Merge(dir + "/results", dir, &merge_code);
  EXPECT_EQ(merge_code, 1) << ReadFile(dir + "/merge.err");
  EXPECT_EQ(merged, Unsharded(dir));
#endif
}

// docs/CLUSTER.md's "Time against memory": glibc's huge-page tunable changes
// where memory comes from, not what runs. The result file of a shard run under
// it is the same file, byte for byte (a glibc that does not know the tunable
// ignores it, and the comparison still holds).
TEST(ClusterTest, HugePagesForTheHeapLeaveTheResultFilesAsTheyAre) {
  const std::string dir = FreshDir("hugetlb");
  std::string files[2];
  for (int huge = 0; huge < 2; ++huge) {
    const std::string out = absl::StrCat(dir, "/", huge);
    const int code = Shell(absl::StrCat(huge ? "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 " : "", kCli,
                                        " explore ", Scenario(), " ", ExploreArgs(),
                                        " --shard 1/2 --out ", out, " > /dev/null 2>&1"));
    EXPECT_EQ(code, 1) << huge;  // the mutant's failures
    files[huge] = ReadFile(out + "/shard-0001-of-0002.jsonl");
  }
  EXPECT_THAT(files[0], HasSubstr("\"end\":{\"runs\":"));
  EXPECT_EQ(files[0], files[1]);
}

}  // namespace
}  // namespace lockstep
