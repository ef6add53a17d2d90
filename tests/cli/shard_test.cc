// Sharded explorations: lockstep explore --shard/--out/--for, lockstep merge,
// replay bundles, and the shard from the environment (issue 16).

#include "cli/shard.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/build_info.h"
#include "cli/commands.h"
#include "faults/explore.h"
#include "faults/results_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/scratch_dir.h"

namespace lockstep::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunLockstep(std::vector<std::string> args) {
  args.insert(args.begin(), "lockstep");
  std::ostringstream out, err;
  const int code = Main(args, out, err);
  return {code, out.str(), err.str()};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string Topologies() { return LOCKSTEP_SOURCE_DIR "/topologies"; }

// A fresh directory under the scratch directory.
std::string FreshDir(const std::string& name) {
  // Per process: ctest runs each test of this file as its own process, and
  // they share names ("scenarios") that one would remove under another.
  const std::string dir =
      lockstep::testing::ScratchDir() + "/shard_test-" + std::to_string(getpid()) + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Three small scenarios, two of which the mutant breaks: failure groups with
// several seeds each.
std::string Scenarios() {
  static const std::string dir = [] {
    const std::string d = FreshDir("scenarios");
    for (const char* f : {"tp4-ep2-qwen3-h200.yaml", "tp8-llama3-h200.yaml",
                          "faults/tp8-ep2-both-moe-groups-tagged.yaml"}) {
      fs::copy_file(Topologies() + "/scenarios/" + f, d + "/" + fs::path(f).filename().string());
    }
    return d;
  }();
  return dir;
}

std::vector<std::string> Exploration(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      "explore", Scenarios(), "--catalogue",           Topologies(), "--seeds",
      "6",       "--policy",  "no-hybrid-fusion-gate", "--schedule", "pct:3"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A thread that sends this process SIGTERM 300 ms after explore has taken
// it over from `before` (by then some runs have finished); join it after the
// run.
std::thread SigtermOnceCaught(const struct sigaction& before) {
  return std::thread([before] {
    for (int i = 0; i < 6000; ++i) {
      struct sigaction current = {};
      sigaction(SIGTERM, nullptr, &current);
      if (current.sa_handler != before.sa_handler) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        kill(getpid(), SIGTERM);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

// Runs every shard of `count` into `dir`.
void RunShards(const std::string& dir, int count, std::vector<std::string> extra = {}) {
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> args = extra;
    args.insert(args.end(), {"--shard", absl::StrCat(i, "/", count), "--out", dir});
    const Result r = RunLockstep(Exploration(args));
    ASSERT_TRUE(r.code == kExitOk || r.code == kExitUnexpected) << r.err;
    if (count > 1) {
      EXPECT_THAT(r.out, HasSubstr(absl::StrFormat("shard %d of %d", i, count)));
    }
  }
}

TEST(ShardTest, ShardedAndMergedEqualsOneUnshardedRunByteForByte) {
  const std::string md = FreshDir("whole") + "/whole.md";
  const Result whole = RunLockstep(Exploration({"--markdown", md}));
  ASSERT_EQ(whole.code, kExitUnexpected) << whole.err;
  // Many seeds of one bug: one line with the count and the smallest seed.
  EXPECT_THAT(whole.out, HasSubstr("failures by signature (2)"));
  EXPECT_THAT(whole.out,
              HasSubstr("tp4-ep2-qwen3-h200: wrong_peer/contributors @moe_deferred "
                        "policy=no-hybrid-fusion-gate\n    6 run(s), smallest seed 1: "));
  EXPECT_THAT(whole.out, HasSubstr("tp8-llama3-h200                       ok    clean 6\n"));
  for (int n : {1, 2, 3, 7}) {
    SCOPED_TRACE(n);
    const std::string dir = FreshDir(absl::StrCat("n", n));
    RunShards(dir, n);
    const Result merged = RunLockstep({"merge", dir, "--markdown", dir + "/merged.md"});
    EXPECT_EQ(merged.code, whole.code) << merged.err;
    EXPECT_EQ(merged.out, whole.out);
    EXPECT_EQ(ReadFile(dir + "/merged.md"), ReadFile(md));
    EXPECT_THAT(merged.err, HasSubstr("failure-001-tp4-ep2-qwen3-h200-seed-1.json"));
  }
}

TEST(ShardTest, ResultFilesDoNotDependOnJobs) {
  const std::string a = FreshDir("jobs1"), b = FreshDir("jobs2");
  RunShards(a, 2, {"--jobs", "1"});
  RunShards(b, 2, {"--jobs", "2"});
  for (const char* f : {"shard-0000-of-0002.jsonl", "shard-0001-of-0002.jsonl"}) {
    const std::string text = ReadFile(a + "/" + f);
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(text, ReadFile(b + "/" + f)) << f;
  }
}

TEST(ShardTest, EveryCountCoversEachItemExactlyOnce) {
  faults::ExploreOptions o;
  o.seeds = 13;
  const uint64_t total = faults::ExplorationSize(5, o);
  for (uint64_t n = 1; n <= 10; ++n) {
    std::set<uint64_t> seen;
    uint64_t runs = 0;
    for (uint64_t i = 0; i < n; ++i) {
      runs += faults::ShardSize(total, i, n);
      for (uint64_t k = i; k < total; k += n) seen.insert(k);
    }
    EXPECT_EQ(runs, total) << n;
    EXPECT_EQ(seen.size(), total) << n;
  }
  // Time-budgeted: whole rounds. A shard's items, in order, are its own
  // and every scenario's of each of its rounds.
  faults::ExploreOptions t;
  t.budget = std::chrono::seconds(60);
  for (uint64_t n = 1; n <= 7; ++n) {
    t.shard_count = n;
    std::set<uint64_t> seen;
    for (uint64_t i = 0; i < n; ++i) {
      t.shard_index = i;
      uint64_t prev = 0;
      for (uint64_t j = 0; j < 3 * 5; ++j) {
        const uint64_t k = faults::ShardItem(j, 5, t);
        EXPECT_EQ(faults::ShardOfItem(k, 5, t), i) << n << " " << j;
        EXPECT_EQ(faults::ItemAt(k, 5, t).scenario, j % 5);
        if (j > 0) {
          EXPECT_GT(k, prev);
        }
        prev = k;
        seen.insert(k);
      }
    }
    // Shards 0..n-1, three rounds each: rounds 0..3n-1, every item once.
    EXPECT_EQ(seen.size(), 3 * 5 * n);
    EXPECT_EQ(*seen.rbegin(), 3 * 5 * n - 1);
  }
  // Items are scenario-major, seeds from --start.
  o.start = 10;
  EXPECT_EQ(faults::ItemAt(14, 5, o).scenario, 1u);
  EXPECT_EQ(faults::ItemAt(14, 5, o).seed, 11u);
}

TEST(ShardTest, MissingAndDuplicatedShardsAreListed) {
  const std::string dir = FreshDir("missing");
  for (int i : {0, 2, 3, 4}) {
    RunLockstep(Exploration({"--shard", absl::StrCat(i, "/7"), "--out", dir}));
  }
  Result r = RunLockstep({"merge", dir});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("missing: 3 of the 7 shards, shards 1, 5-6; run them again"));
  EXPECT_TRUE(r.out.empty());

  const std::string again = FreshDir("duplicate");
  RunShards(again, 2);
  const std::string other = FreshDir("duplicate-copy");
  fs::copy_file(again + "/shard-0001-of-0002.jsonl", other + "/shard-0001-of-0002.jsonl");
  r = RunLockstep({"merge", again, other});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err,
              HasSubstr("duplicated: shard 1 of 2 in " + again + "/shard-0001-of-0002.jsonl, " +
                        other + "/shard-0001-of-0002.jsonl; keep one of them"));
}

TEST(ShardTest, MixedExplorationsAreRefused) {
  const std::string a = FreshDir("mixed-a"), b = FreshDir("mixed-b");
  RunLockstep(Exploration({"--shard", "0/2", "--out", a}));
  RunLockstep({"explore", Scenarios(), "--catalogue", Topologies(), "--seeds", "5", "--policy",
               "no-hybrid-fusion-gate", "--schedule", "pct:3", "--shard", "1/2", "--out", b});
  Result r = RunLockstep({"merge", a, b});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("mixed explorations: " + a + "/shard-0000-of-0002.jsonl and " + b +
                               "/shard-0001-of-0002.jsonl are shards of different explorations "
                               "(seeds '6' vs '5')"));
  // Another shard count.
  RunLockstep(Exploration({"--shard", "1/3", "--out", b}));
  r = RunLockstep({"merge", a + "/shard-0000-of-0002.jsonl", b + "/shard-0001-of-0003.jsonl"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("is shard 0 of 2"));
  EXPECT_THAT(r.err, HasSubstr("shard 1 of 3"));
}

TEST(ShardTest, AReplayBundleReplaysAnywhereAndAnEditedOneDoesNot) {
  const std::string dir = FreshDir("bundle");
  RunShards(dir, 3, {"--swarm"});
  const Result merged = RunLockstep({"merge", dir});
  ASSERT_EQ(merged.code, kExitUnexpected) << merged.err;
  std::vector<std::string> bundles;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with("failure-")) bundles.push_back(e.path());
  }
  ASSERT_FALSE(bundles.empty());
  // Anywhere: the bundle alone, the scenario files gone.
  const std::string moved = FreshDir("bundle-moved") + "/b.json";
  fs::copy_file(bundles.front(), moved);
  const nlohmann::json b = nlohmann::json::parse(ReadFile(moved));
  for (const char* key : {"seed", "policy", "schedule", "trace_hash", "signature", "runs"}) {
    EXPECT_TRUE(b.contains(key)) << key;
  }
  EXPECT_EQ(b["schedule"], "pct:3");
  Result r = RunLockstep({"replay", moved});
  EXPECT_EQ(r.code, kExitOk) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("bundle:  "));
  EXPECT_THAT(r.out, HasSubstr("reproduced"));
  nlohmann::json edited = b;
  edited["trace_hash"] = "0x0123456789abcdef";
  WriteFile(moved, edited.dump());
  r = RunLockstep({"replay", moved});
  EXPECT_EQ(r.code, kExitUnexpected);
  EXPECT_THAT(r.out, HasSubstr("DIFFERENT"));
  EXPECT_THAT(r.err, HasSubstr(moved + " expects"));
  EXPECT_THAT(r.err, HasSubstr("trace hash 0x0123456789abcdef"));
  // The bundle names the build that ran it; a replay that differs says
  // whether the build explains it.
  ASSERT_TRUE(b["lockstep"].contains("build"));
  EXPECT_EQ(b["lockstep"]["build"], std::string(ThisBuild()));
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("this build of lockstep (", std::string(ThisBuild()),
                                            ") recorded it, so unless the file was edited, a run "
                                            "did not repeat itself")));
  edited["lockstep"]["build"] = "0.0.9 (git 0123456789ab)";
  WriteFile(moved, edited.dump());
  r = RunLockstep({"replay", moved});
  EXPECT_EQ(r.code, kExitUnexpected);
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat("it was recorded by lockstep 0.0.9 (git 0123456789ab) "
                                     "and this is lockstep ",
                                     std::string(ThisBuild()), ", whose simulation may differ")));
  edited["lockstep"].erase("build");
  WriteFile(moved, edited.dump());
  r = RunLockstep({"replay", moved});
  EXPECT_EQ(r.code, kExitUnexpected);
  EXPECT_THAT(r.err, HasSubstr("(another build, or an edited file)"));
  edited["lockstep"]["build"] = 7;
  WriteFile(moved, edited.dump());
  r = RunLockstep({"replay", moved});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("lockstep.build is not a build of lockstep"));
}

// The result file of a --seeds shard with only its first `k` runs, as a
// stopped shard or a checkpoint leaves it.
std::string StoppedAfter(const std::string& complete, size_t k) {
  std::vector<std::string> lines;
  for (size_t p = 0, q; (q = complete.find('\n', p)) != std::string::npos; p = q + 1) {
    lines.push_back(complete.substr(p, q - p));
  }
  std::string text = lines[0] + "\n";
  for (size_t j = 0; j < k; ++j) text += lines[1 + j] + "\n";
  return text + absl::StrFormat(R"({"end":{"runs":%d,"stopped":true}})", k) + "\n";
}

TEST(ShardTest, AStoppedShardResumesToTheFileOfOneRun) {
  const std::string full_dir = FreshDir("resume-full");
  const Result full = RunLockstep(Exploration({"--shard", "1/2", "--out", full_dir}));
  ASSERT_TRUE(full.code == kExitOk || full.code == kExitUnexpected) << full.err;
  const std::string name = "/shard-0001-of-0002.jsonl";
  const std::string complete = ReadFile(full_dir + name);
  for (size_t k : {size_t{0}, size_t{1}, size_t{4}}) {
    const std::string dir = FreshDir(absl::StrCat("resume-", k));
    WriteFile(dir + name, StoppedAfter(complete, k));
    Result r = RunLockstep({"merge", dir + name});
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_THAT(r.err, HasSubstr(absl::StrFormat(
                           "stopped: shard 1 of 2 after %d of its 9 runs (%s%s); finish it: its "
                           "explore command again, with --resume",
                           k, dir, name)));
    r = RunLockstep(Exploration({"--shard", "1/2", "--out", dir, "--resume"}));
    EXPECT_EQ(r.code, full.code) << r.err;
    EXPECT_EQ(r.out, full.out) << k;
    EXPECT_EQ(ReadFile(dir + name), complete) << k;
    EXPECT_THAT(r.err, HasSubstr(absl::StrFormat(
                           "--resume: %s%s holds %d of the shard's 9 run(s); running the rest", dir,
                           name, k)));
  }
  // A finished shard: nothing runs again, and nothing changes.
  Result r = RunLockstep(Exploration({"--shard", "1/2", "--out", full_dir, "--resume"}));
  EXPECT_EQ(r.code, full.code);
  EXPECT_EQ(r.out, full.out);
  EXPECT_EQ(ReadFile(full_dir + name), complete);
  EXPECT_THAT(r.err, HasSubstr("holds 9 of the shard's 9 run(s): all of them"));
  // No file yet: the whole shard.
  const std::string fresh = FreshDir("resume-fresh");
  r = RunLockstep(Exploration({"--shard", "1/2", "--out", fresh, "--resume"}));
  EXPECT_EQ(r.code, full.code);
  EXPECT_EQ(ReadFile(fresh + name), complete);
  EXPECT_THAT(r.err, HasSubstr("--resume: no " + fresh + name + " yet"));
}

// A file --resume cannot finish (another exploration's or build's, one that
// does not read) is replaced by a run of the whole shard, saying why: a
// results directory used again must not fail the next exploration.
TEST(ShardTest, ResumeStartsOverFromAFileItCannotFinish) {
  const std::string dir = FreshDir("resume-over");
  const std::string name = "/shard-0001-of-0002.jsonl";
  ASSERT_NE(RunLockstep(Exploration({"--shard", "1/2", "--out", dir})).code, kExitUsage);
  const std::string complete = ReadFile(dir + name);
  const std::string stopped = StoppedAfter(complete, 3);
  auto resumed = [&](const std::string& kept, const std::string& why) {
    WriteFile(dir + name, kept);
    const Result r = RunLockstep(Exploration({"--shard", "1/2", "--out", dir, "--resume"}));
    EXPECT_NE(r.code, kExitUsage) << r.err;
    EXPECT_THAT(r.err, HasSubstr("lockstep explore: --resume: " + why +
                                 "; the shard runs from its start and replaces it\n"));
    EXPECT_EQ(ReadFile(dir + name), complete) << why;
  };
  // Another exploration's (one seed fewer).
  const std::string other = FreshDir("resume-other");
  ASSERT_NE(RunLockstep({"explore", Scenarios(), "--catalogue", Topologies(), "--seeds", "5",
                         "--policy", "no-hybrid-fusion-gate", "--schedule", "pct:3", "--shard",
                         "1/2", "--out", other})
                .code,
            kExitUsage);
  resumed(StoppedAfter(ReadFile(other + name), 2),
          dir + name + " is a shard of another exploration (seeds '5' vs '6')");
  // Another build's.
  nlohmann::json header = nlohmann::json::parse(stopped.substr(0, stopped.find('\n')));
  header["build"] = "0.0.9 (git 0123456789ab)";
  resumed(header.dump() + stopped.substr(stopped.find('\n')),
          absl::StrCat(dir, name, " was written by lockstep 0.0.9 (git 0123456789ab) and this is ",
                       "lockstep ", std::string(ThisBuild())));
  // Runs that are not the shard's first (its second left out).
  std::string gap = stopped;
  const size_t second = gap.find('\n', gap.find('\n') + 1) + 1;
  gap.erase(second, gap.find('\n', second) + 1 - second);
  gap.replace(gap.rfind("\"runs\":3"), 9, "\"runs\":2");
  resumed(gap, dir + name +
                   ":3: run 5 where this shard's run 3 belongs (its run #2): a shard keeps its "
                   "first runs, in order");
  // --resume goes with --out and --seeds.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--resume"},
        std::vector<std::string>{"--out", dir, "--resume", "--for", "1s"}}) {
    std::vector<std::string> args = {"explore", Scenarios(), "--catalogue", Topologies()};
    args.insert(args.end(), extra.begin(), extra.end());
    const Result r = RunLockstep(args);
    EXPECT_EQ(r.code, kExitUsage);
    EXPECT_THAT(r.err, HasSubstr("--resume finishes a --seeds shard from its result file: it "
                                 "needs --out DIR and no --for"));
  }
}

TEST(ShardTest, ASeedsShardStoppedBySigtermKeepsItsFirstRunsAndExitsFour) {
  const std::string dir = FreshDir("sigterm-seeds");
  struct sigaction before = {};
  sigaction(SIGTERM, nullptr, &before);
  ASSERT_NE(before.sa_handler, SIG_IGN) << "this test needs SIGTERM not ignored";
  std::thread sender = SigtermOnceCaught(before);
  // Far more runs than 300 ms allow.
  const Result r = RunLockstep({"explore", Scenarios(), "--catalogue", Topologies(), "--seeds",
                                "100000", "--jobs", "2", "--out", dir});
  sender.join();
  EXPECT_EQ(r.code, kExitStopped) << r.err;
  EXPECT_THAT(r.err, HasSubstr("lockstep explore: stopped by SIGTERM after "));
  EXPECT_THAT(r.err, HasSubstr(" of the shard's 300000 run(s); " + dir +
                               "/shard-0000-of-0001.jsonl keeps them: run the same command with "
                               "--resume to finish the shard"));
  EXPECT_THAT(r.out, HasSubstr("STOPPED after "));
  const std::string text = ReadFile(dir + "/shard-0000-of-0001.jsonl");
  EXPECT_THAT(text, HasSubstr(",\"stopped\":true}}\n"));
  const Result merged = RunLockstep({"merge", dir});
  EXPECT_EQ(merged.code, kExitUsage);
  EXPECT_THAT(merged.err, HasSubstr("stopped: shard 0 of 1 after "));
  struct sigaction after = {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST(ShardTest, ShardsOfTwoBuildsAreNotMerged) {
  const std::string dir = FreshDir("builds");
  RunShards(dir, 4);
  const std::string first = dir + "/shard-0000-of-0004.jsonl";
  const std::string text = ReadFile(first);
  nlohmann::json header = nlohmann::json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(header["build"], std::string(ThisBuild()));
  const Result clean = RunLockstep({"merge", dir});
  ASSERT_NE(clean.code, kExitUsage) << clean.err;
  // Shard 0 as another build wrote it.
  header["build"] = "0.0.9 (git 0123456789ab)";
  WriteFile(first, header.dump() + text.substr(text.find('\n')));
  const Result r = RunLockstep({"merge", dir});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("the shards were written by different builds of lockstep"));
  EXPECT_THAT(r.err, HasSubstr("lockstep 0.0.9 (git 0123456789ab): " + first + "\n"));
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat(
                  "lockstep ", std::string(ThisBuild()), ": ", dir, "/shard-0001-of-0004.jsonl, ",
                  dir, "/shard-0002-of-0004.jsonl, ", dir, "/shard-0003-of-0004.jsonl\n")));
  EXPECT_THAT(r.err, HasSubstr("run every shard of an exploration with one build"));
}

TEST(ShardTest, ATimedExplorationRecordsItsRootSeedAndMergesToItsOwnSummary) {
  const std::string dir = FreshDir("timed");
  const std::vector<std::string> args = {"explore", Scenarios(), "--catalogue", Topologies(),
                                         "--for",   "1s",        "--out",       dir};
  const Result r = RunLockstep(args);
  ASSERT_NE(r.code, kExitUsage) << r.err;
  EXPECT_THAT(r.err, HasSubstr("lockstep explore: root seed "));
  EXPECT_THAT(r.out, HasSubstr("run(s) of random seeds from root seed "));
  const std::string text = ReadFile(dir + "/shard-0000-of-0001.jsonl");
  const nlohmann::json header = nlohmann::json::parse(text.substr(0, text.find('\n')));
  EXPECT_EQ(header["exploration"]["for_seconds"], 1);
  const uint64_t root = header["exploration"]["root_seed"].get<uint64_t>();
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("root seed ", root, " (--for 1s)")));
  const Result merged = RunLockstep({"merge", dir});
  EXPECT_EQ(merged.code, r.code);
  EXPECT_EQ(merged.out, r.out);
}

TEST(ShardTest, StopOnFailureGivesTheSamePrefixWhateverJobs) {
  // A scenario the mutant leaves clean first: item 0 passes, item 1 fails,
  // and with two jobs items past it may run but are not kept.
  const std::string dir = FreshDir("stop");
  fs::copy_file(Topologies() + "/scenarios/tp8-llama3-h200.yaml", dir + "/a-llama.yaml");
  fs::copy_file(Topologies() + "/scenarios/tp4-ep2-qwen3-h200.yaml", dir + "/b-qwen.yaml");
  std::vector<std::string> outs;
  for (const char* jobs : {"1", "2"}) {
    const Result r = RunLockstep({"explore", dir, "--catalogue", Topologies(), "--policy",
                                  "no-hybrid-fusion-gate", "--for", "20s", "--root-seed", "99",
                                  "--stop-on-failure", "--jobs", jobs});
    EXPECT_EQ(r.code, kExitUnexpected) << r.err;
    outs.push_back(r.out);
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_THAT(outs[0], HasSubstr("2 scenario(s), 2 run(s) of random seeds from root seed 99 (--for "
                                 "20s, stopping at the first failure)"));
  EXPECT_THAT(outs[0], HasSubstr("failures by signature (1)"));
}

// An entry of the scenario directory that cannot be read fails the
// exploration closed (exit 2); merged, its shards do the same.
TEST(ShardTest, UnreadableEntriesFailTheMergeAsTheyFailTheExploration) {
  const std::string dir = FreshDir("unreadable-scenarios");
  for (const fs::directory_entry& e : fs::directory_iterator(Scenarios())) {
    fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
  }
  fs::create_symlink(dir + "/gone.yaml", dir + "/broken.yaml");
  auto exploration = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"explore", dir, "--catalogue", Topologies(),
                                     "--seeds", "2", "--policy",    "no-hybrid-fusion-gate"};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunLockstep(args);
  };
  const Result whole = exploration({});
  ASSERT_EQ(whole.code, kExitUsage) << whole.err;
  EXPECT_THAT(whole.err, HasSubstr("1 entry under " + dir + " could not be read and did not run"));
  const std::string out = FreshDir("unreadable-out");
  for (const char* shard : {"0/2", "1/2"}) {
    EXPECT_EQ(exploration({"--shard", shard, "--out", out}).code, kExitUsage);
  }
  const Result merged = RunLockstep({"merge", out});
  EXPECT_EQ(merged.code, kExitUsage) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
  EXPECT_THAT(merged.err,
              HasSubstr("lockstep merge: 1 entry under " + dir +
                        " could not be read and did not run:\n  " + dir + "/broken.yaml"));
}

// Where the results go is checked before anything runs: a --for budget is
// not spent to find out the folder cannot be written.
TEST(ShardTest, OutputsAreCheckedBeforeTheRuns) {
  const std::string dir = FreshDir("outputs");
  WriteFile(dir + "/a-file", "x");
  Result r = RunLockstep({"explore", Scenarios(), "--catalogue", Topologies(), "--for", "5s",
                          "--root-seed", "5", "--shard", "0/2", "--out", dir + "/a-file/x"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--out " + dir + "/a-file/x: cannot create the directory"));
  EXPECT_THAT(r.err, Not(HasSubstr("root seed")));  // printed as the runs begin
  r = RunLockstep(Exploration({"--markdown", dir + "/missing/summary.md"}));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--markdown " + dir + "/missing/summary.md: the folder " + dir +
                               "/missing does not exist"));
  EXPECT_TRUE(r.out.empty());
  // merge creates the bundles' folder, and reads a directory named twice once.
  const std::string results = FreshDir("outputs-results");
  RunShards(results, 2);
  r = RunLockstep({"merge", results, results + "/",
                   results + "/../" + fs::path(results).filename().string(), "--bundles",
                   dir + "/new/bundles"});
  EXPECT_EQ(r.code, kExitUnexpected) << r.err;
  EXPECT_TRUE(fs::exists(dir + "/new/bundles/failure-001-tp4-ep2-qwen3-h200-seed-1.json"));
  // No temporary file is left beside what was written.
  for (const fs::directory_entry& e : fs::directory_iterator(results)) {
    EXPECT_FALSE(e.path().filename().string().starts_with(".")) << e.path();
  }
}

// A time-budgeted shard runs whole rounds, every scenario of each, whatever
// the shard and scenario counts (3 scenarios in 3 shards: by item, shard 0
// would run only the first scenario).
TEST(ShardTest, ATimedShardRunsEveryScenario) {
  const std::string dir = FreshDir("timed-shards");
  for (const char* shard : {"0/3", "1/3", "2/3"}) {
    const Result r = RunLockstep({"explore", Scenarios(), "--catalogue", Topologies(), "--for",
                                  "3s", "--root-seed", "7", "--shard", shard, "--out", dir});
    ASSERT_NE(r.code, kExitUsage) << r.err;
    EXPECT_THAT(r.out, HasSubstr("every scenario of the rounds r with r mod 3"));
  }
  const std::string text = ReadFile(dir + "/shard-0000-of-0003.jsonl");
  std::set<std::string> ran;
  for (size_t p = text.find('\n') + 1, q; (q = text.find('\n', p)) != std::string::npos;
       p = q + 1) {
    const nlohmann::json line = nlohmann::json::parse(text.substr(p, q - p));
    if (line.contains("scenario")) ran.insert(line["scenario"].get<std::string>());
  }
  EXPECT_EQ(ran.size(), 3u);
  const Result merged = RunLockstep({"merge", dir});
  EXPECT_NE(merged.code, kExitUsage) << merged.err;
}

// Shards run with the scenarios at another path cannot merge into one
// summary (its replay commands name the path): the message says so.
TEST(ShardTest, ShardsOfOneDirectoryReadFromTwoPathsNameThePath) {
  const std::string elsewhere = FreshDir("scenarios-elsewhere");
  for (const fs::directory_entry& e : fs::directory_iterator(Scenarios())) {
    fs::copy_file(e.path(), elsewhere + "/" + e.path().filename().string());
  }
  const std::string out = FreshDir("two-paths");
  RunLockstep(Exploration({"--shard", "0/2", "--out", out}));
  std::vector<std::string> args = Exploration({"--shard", "1/2", "--out", out});
  args[1] = elsewhere;
  RunLockstep(args);
  const Result r = RunLockstep({"merge", out});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("was read from '" + Scenarios()));
  EXPECT_THAT(r.err, HasSubstr("run every shard with the same scenario path"));
}

// SIGTERM (a scheduler's time limit) during a --for exploration: it stops as
// if the time were up and writes what finished.
TEST(ShardTest, ATimedExplorationStoppedBySigtermKeepsWhatFinished) {
  const std::string dir = FreshDir("sigterm");
  struct sigaction before = {};
  sigaction(SIGTERM, nullptr, &before);
  ASSERT_NE(before.sa_handler, SIG_IGN) << "this test needs SIGTERM not ignored";
  std::thread sender = SigtermOnceCaught(before);
  const Result r = RunLockstep({"explore", Scenarios(), "--catalogue", Topologies(), "--for", "10m",
                                "--root-seed", "3", "--out", dir});
  sender.join();
  EXPECT_NE(r.code, kExitUsage) << r.err;
  EXPECT_THAT(r.err, HasSubstr("lockstep explore: stopped by SIGTERM after "));
  EXPECT_THAT(r.err, HasSubstr("wrote " + dir + "/shard-0000-of-0001.jsonl"));
  EXPECT_NE(RunLockstep({"merge", dir}).code, kExitUsage);
  // The handler it found is back.
  struct sigaction after = {};
  sigaction(SIGTERM, nullptr, &after);
  EXPECT_EQ(after.sa_handler, before.sa_handler);
}

TEST(ShardTest, BadFlagsExitTwoNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--shard", "7/7", "--out", "x"}, "--shard 7/7: shard index 7 is not below the count 7"},
      {{"--shard", "0/0", "--out", "x"}, "the shard count must be in [1, 1048576], got 0"},
      {{"--shard", "three/7"}, "--shard expects I/N"},
      {{"--shard", "1/2"}, "needs --out DIR"},
      {{"--shard", "1/2", "--shard-count", "2"}, "drop --shard-count"},
      {{"--shard-count", "2"}, "--shard-count needs a shard index"},
      {{"--for", "0s"}, "--for expects a duration"},
      {{"--for", "40x"}, "--for expects a duration"},
      {{"--for", "1m", "--seeds", "3"}, "drop --seeds and --start"},
      {{"--root-seed", "3"}, "go with --for DURATION"},
      {{"--stop-on-failure"}, "go with --for DURATION"},
  };
  for (const auto& [extra, message] : cases) {
    const Result r = RunLockstep(Exploration(extra));
    EXPECT_EQ(r.code, kExitUsage) << extra[0];
    EXPECT_THAT(r.err, HasSubstr(message)) << extra[0];
  }
  const Result r = RunLockstep({"explore", Scenarios(), "--catalogue", Topologies(), "--for", "1m",
                                "--shard", "0/2", "--out", "x"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("give every shard the same --root-seed"));
}

// --- The shard from the environment. ---------------------------------------

EnvLookup FakeEnv(std::map<std::string, std::string> vars) {
  return [vars](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ResolveShardTest, EnvironmentsGiveTheShardAndTheFlagWins) {
  const EnvLookup slurm = FakeEnv({{"SLURM_ARRAY_TASK_ID", "6"},
                                   {"SLURM_ARRAY_TASK_MIN", "4"},
                                   {"SLURM_ARRAY_TASK_COUNT", "3"}});
  absl::StatusOr<ShardSpec> s = ResolveShard("", false, 0, false, slurm);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 2u);
  EXPECT_EQ(s->count, 3u);
  EXPECT_THAT(s->source, HasSubstr("SLURM_ARRAY_TASK_ID=6 - SLURM_ARRAY_TASK_MIN=4"));
  s = ResolveShard("1/5", true, 0, false, slurm);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 1u);
  EXPECT_EQ(s->count, 5u);
  EXPECT_EQ(s->source, "--shard 1/5");

  s = ResolveShard("", false, 0, false,
                   FakeEnv({{"JOB_COMPLETION_INDEX", "3"}, {"LOCKSTEP_SHARD_COUNT", "4"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 3u);
  EXPECT_EQ(s->count, 4u);
  // --shard-count wins over the environment's count.
  s = ResolveShard("", false, 8, true,
                   FakeEnv({{"JOB_COMPLETION_INDEX", "5"}, {"LOCKSTEP_SHARD_COUNT", "4"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 5u);
  EXPECT_EQ(s->count, 8u);

  s = ResolveShard("", false, 0, false,
                   FakeEnv({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 2u);
  EXPECT_EQ(s->count, 3u);

  s = ResolveShard("", false, 0, false, FakeEnv({{"PMI_RANK", "4"}, {"PMI_SIZE", "6"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 4u);
  EXPECT_EQ(s->count, 6u);
  EXPECT_EQ(s->source, "PMI_RANK=4, PMI_SIZE=6");

  // --array=10-24:2 numbers its 8 tasks 10, 12, ..., 24: task 16 is the fourth.
  s = ResolveShard("", false, 0, false,
                   FakeEnv({{"SLURM_ARRAY_TASK_ID", "16"},
                            {"SLURM_ARRAY_TASK_MIN", "10"},
                            {"SLURM_ARRAY_TASK_STEP", "2"},
                            {"SLURM_ARRAY_TASK_COUNT", "8"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 3u);
  EXPECT_EQ(s->count, 8u);
  EXPECT_THAT(s->source, HasSubstr("/ SLURM_ARRAY_TASK_STEP=2"));
  // --shard-count that agrees with the array's count.
  s = ResolveShard("", false, 3, true, slurm);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 2u);

  s = ResolveShard("", false, 0, false, FakeEnv({}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->count, 1u);
  EXPECT_TRUE(s->source.empty());
}

// An environment ResolveShard must refuse, and what its message must say.
using RefusedEnvironment = std::pair<std::map<std::string, std::string>, std::string>;
void ExpectEachRefused(const std::vector<RefusedEnvironment>& cases) {
  for (const auto& [vars, message] : cases) {
    absl::StatusOr<ShardSpec> s = ResolveShard("", false, 0, false, FakeEnv(vars));
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr(message));
  }
}

TEST(ResolveShardTest, MalformedEnvironmentsNameTheVariable) {
  const std::vector<RefusedEnvironment> cases = {
      {{{"SLURM_ARRAY_TASK_ID", "x1"}}, "SLURM_ARRAY_TASK_ID='x1' is not an integer >= 0"},
      {{{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "2"}},
       "SLURM_ARRAY_TASK_MIN is not set"},
      {{{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_MIN", "2"}},
       "SLURM_ARRAY_TASK_ID=1 is below SLURM_ARRAY_TASK_MIN=2"},
      {{{"SLURM_ARRAY_TASK_ID", "5"},
        {"SLURM_ARRAY_TASK_MIN", "1"},
        {"SLURM_ARRAY_TASK_COUNT", "3"}},
       "shard index 4 is not below the count 3"},
      {{{"JOB_COMPLETION_INDEX", "2"}}, "give --shard-count N or set LOCKSTEP_SHARD_COUNT"},
      {{{"JOB_COMPLETION_INDEX", "2"}, {"LOCKSTEP_SHARD_COUNT", ""}},
       "LOCKSTEP_SHARD_COUNT='' is not an integer >= 0"},
      {{{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}},
       "the shard count must be in [1, 1048576], got 0"},
      {{{"OMPI_COMM_WORLD_RANK", "-1"}}, "OMPI_COMM_WORLD_RANK='-1' is not an integer >= 0"},
      {{{"PMI_RANK", "1"}}, "PMI_SIZE is not set"},
      // A task of an array with a step that does not land on it.
      {{{"SLURM_ARRAY_TASK_ID", "5"},
        {"SLURM_ARRAY_TASK_MIN", "0"},
        {"SLURM_ARRAY_TASK_STEP", "2"},
        {"SLURM_ARRAY_TASK_COUNT", "8"}},
       "SLURM_ARRAY_TASK_ID=5 is not SLURM_ARRAY_TASK_MIN=0 plus a multiple of "
       "SLURM_ARRAY_TASK_STEP=2"},
      // mpirun inside an array task: every rank would run the task's shard.
      {{{"SLURM_ARRAY_TASK_ID", "1"},
        {"SLURM_ARRAY_TASK_MIN", "0"},
        {"SLURM_ARRAY_TASK_COUNT", "4"},
        {"OMPI_COMM_WORLD_RANK", "2"},
        {"OMPI_COMM_WORLD_SIZE", "4"}},
       "SLURM_ARRAY_TASK_ID='1', OMPI_COMM_WORLD_RANK='2' are all set"},
      {{{"JOB_COMPLETION_INDEX", "0"}, {"PMI_RANK", "0"}},
       "JOB_COMPLETION_INDEX='0', PMI_RANK='0' are all set"},
  };
  ExpectEachRefused(cases);
}

TEST(ResolveShardTest, SrunTasksAreShardsAndSplitTheirArrayTasksShard) {
  // srun -n 4: each task its own shard.
  absl::StatusOr<ShardSpec> s = ResolveShard(
      "", false, 0, false, FakeEnv({{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 3u);
  EXPECT_EQ(s->count, 4u);
  EXPECT_EQ(s->source, "SLURM_PROCID=3, SLURM_STEP_NUM_TASKS=4");

  // A batch script without srun: SLURM_PROCID=0 and the allocation's
  // SLURM_NTASKS, no step. Not a shard: the one process runs everything.
  s = ResolveShard("", false, 0, false, FakeEnv({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 0u);
  EXPECT_EQ(s->count, 1u);
  EXPECT_TRUE(s->source.empty());

  // srun -n 3 inside task 6 of --array=4-6: array shard 2 of 3, split three
  // ways, numbered across the array. Every (array task, step task) pair gets
  // its own shard of 9.
  std::set<uint64_t> seen;
  for (int array_task = 4; array_task <= 6; ++array_task) {
    for (int task = 0; task < 3; ++task) {
      s = ResolveShard("", false, 0, false,
                       FakeEnv({{"SLURM_ARRAY_TASK_ID", std::to_string(array_task)},
                                {"SLURM_ARRAY_TASK_MIN", "4"},
                                {"SLURM_ARRAY_TASK_COUNT", "3"},
                                {"SLURM_PROCID", std::to_string(task)},
                                {"SLURM_STEP_NUM_TASKS", "3"}}));
      ASSERT_TRUE(s.ok()) << s.status();
      EXPECT_EQ(s->count, 9u);
      EXPECT_EQ(s->index, static_cast<uint64_t>((array_task - 4) * 3 + task));
      seen.insert(s->index);
    }
  }
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_EQ(s->source,
            "(SLURM_ARRAY_TASK_ID=6 - SLURM_ARRAY_TASK_MIN=4, SLURM_ARRAY_TASK_COUNT=3) * "
            "SLURM_STEP_NUM_TASKS=3 + SLURM_PROCID=2");
  // The usual `srun lockstep explore` in an array script: a step of one task
  // is the array task.
  s = ResolveShard("", false, 0, false,
                   FakeEnv({{"SLURM_ARRAY_TASK_ID", "5"},
                            {"SLURM_ARRAY_TASK_MIN", "4"},
                            {"SLURM_ARRAY_TASK_COUNT", "3"},
                            {"SLURM_PROCID", "0"},
                            {"SLURM_STEP_NUM_TASKS", "1"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 1u);
  EXPECT_EQ(s->count, 3u);

  // srun --mpi=pmi2 sets PMI_RANK and PMI_SIZE to the same numbering.
  s = ResolveShard("", false, 0, false,
                   FakeEnv({{"SLURM_PROCID", "1"},
                            {"SLURM_STEP_NUM_TASKS", "2"},
                            {"PMI_RANK", "1"},
                            {"PMI_SIZE", "2"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->index, 1u);
  EXPECT_EQ(s->count, 2u);
  // --shard-count overrides the step's count, as it does MPI's.
  s = ResolveShard("", false, 8, true,
                   FakeEnv({{"SLURM_PROCID", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->count, 8u);
  EXPECT_EQ(s->source, "SLURM_PROCID=1, --shard-count=8");
}

TEST(ResolveShardTest, SrunEnvironmentsThatDoNotAgreeAreRefused) {
  const std::vector<RefusedEnvironment> cases = {
      {{{"SLURM_STEP_NUM_TASKS", "4"}}, "SLURM_PROCID is not set"},
      {{{"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_PROCID", "4"}},
       "SLURM_PROCID=4 is not below SLURM_STEP_NUM_TASKS=4"},
      {{{"SLURM_STEP_NUM_TASKS", "x"}, {"SLURM_PROCID", "0"}},
       "SLURM_STEP_NUM_TASKS='x' is not an integer >= 0"},
      // mpirun inside an srun task, and a PMI numbering that is not srun's.
      {{{"SLURM_STEP_NUM_TASKS", "2"},
        {"SLURM_PROCID", "1"},
        {"OMPI_COMM_WORLD_RANK", "0"},
        {"OMPI_COMM_WORLD_SIZE", "4"}},
       "SLURM_PROCID='1', OMPI_COMM_WORLD_RANK='0' are all set"},
      {{{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "1"}, {"PMI_RANK", "3"}, {"PMI_SIZE", "4"}},
       "SLURM_PROCID='1', PMI_RANK='3' are all set"},
      // An array task's index past its count is named before it is split.
      {{{"SLURM_ARRAY_TASK_ID", "5"},
        {"SLURM_ARRAY_TASK_MIN", "1"},
        {"SLURM_ARRAY_TASK_COUNT", "3"},
        {"SLURM_PROCID", "0"},
        {"SLURM_STEP_NUM_TASKS", "2"}},
       "shard index 4 is not below the count 3"},
  };
  ExpectEachRefused(cases);
  // The flag wins over a malformed step.
  const absl::StatusOr<ShardSpec> s =
      ResolveShard("0/2", true, 0, false, FakeEnv({{"SLURM_STEP_NUM_TASKS", "x"}}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->count, 2u);
}

TEST(ResolveShardTest, AShardCountTheArrayDoesNotHaveSaysHowToRunOneShardAgain) {
  // One lost task of a 16-shard array run again as --array=3: its place in
  // this array is 0, not 3.
  const absl::StatusOr<ShardSpec> s = ResolveShard("", false, 16, true,
                                                   FakeEnv({{"SLURM_ARRAY_TASK_ID", "3"},
                                                            {"SLURM_ARRAY_TASK_MIN", "3"},
                                                            {"SLURM_ARRAY_TASK_COUNT", "1"}}));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(),
              HasSubstr("--shard-count 16 but the Slurm array has 1 task(s)"));
  EXPECT_THAT(s.status().message(), HasSubstr("give it as --shard I/16"));
}

// Sets environment variables for the life of the object (tests run one at a time).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::map<std::string, std::string> vars) : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) unsetenv(k.c_str());
  }

 private:
  std::map<std::string, std::string> vars_;
};

TEST(ResolveShardTest, ExploreTakesTheShardFromTheProcessEnvironment) {
  const ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  Result r = RunLockstep(Exploration());
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("shard 1 of 2 (OMPI_COMM_WORLD_RANK=1, OMPI_COMM_WORLD_SIZE=2) "
                               "needs --out DIR"));
  const std::string dir = FreshDir("env");
  r = RunLockstep(Exploration({"--out", dir}));
  EXPECT_EQ(r.code, kExitUnexpected) << r.err;
  EXPECT_TRUE(fs::exists(dir + "/shard-0001-of-0002.jsonl"));
  // The flag wins.
  r = RunLockstep(Exploration({"--shard", "0/1"}));
  EXPECT_EQ(r.code, kExitUnexpected) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("shard 1 of 2")));
}

TEST(DurationTest, ParsesBudgets) {
  EXPECT_EQ(ParseDuration("90s")->count(), 90);
  EXPECT_EQ(ParseDuration("40m")->count(), 2400);
  EXPECT_EQ(ParseDuration("2h")->count(), 7200);
  EXPECT_EQ(ParseDuration("1h30m")->count(), 5400);
  for (const char* bad : {"", "0s", "5", "m", "1.5h", "-1s", "31d", "999h", "1h30"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(ProgressTest, SaysRunsRateFailuresAndTimeLeft) {
  EXPECT_EQ(FormatProgress({50, 200, 3}, 10.0, std::nullopt),
            "50/200 runs, 5.0 runs/s, 3 failure(s), ~30s left");
  EXPECT_EQ(FormatProgress({120, 0, 0}, 60.0, 2400.0),
            "120 runs, 2.0 runs/s, 0 failure(s), 39m00s left");
  // 150 of the 170 done were kept from before (--resume): 20 runs in 10 s.
  EXPECT_EQ(FormatProgress({170, 200, 4, 150}, 10.0, std::nullopt),
            "170/200 runs, 2.0 runs/s, 4 failure(s), ~15s left");
}

// --- Hostile result files: exit 2 naming the file and line, never a crash. ---

TEST(HostileResultFileTest, GarbageAndTruncationNameFileAndLine) {
  const std::string dir = FreshDir("hostile-src");
  RunShards(dir, 1);
  const std::string good = ReadFile(dir + "/shard-0000-of-0001.jsonl");
  std::vector<std::string> lines;
  for (size_t p = 0, q; (q = good.find('\n', p)) != std::string::npos; p = q + 1) {
    lines.push_back(good.substr(p, q - p));
  }
  ASSERT_EQ(lines.size(), 1u + 18u + 1u);  // header, 3 x 6 runs, end
  auto join = [](const std::vector<std::string>& ls) {
    std::string t;
    for (const std::string& l : ls) t += l + "\n";
    return t;
  };
  std::vector<std::string> truncated(lines.begin(), lines.end() - 1);
  std::vector<std::string> edited = lines;
  nlohmann::json rec = nlohmann::json::parse(edited[2]);
  rec["seed"] = 7;
  edited[2] = rec.dump();
  std::vector<std::string> bad_verdict = lines;
  rec = nlohmann::json::parse(lines[3]);
  rec["verdict"] = "fine";
  bad_verdict[3] = rec.dump();
  std::vector<std::string> swapped = lines;
  std::swap(swapped[2], swapped[3]);
  std::vector<std::string> after_end = lines;
  after_end.push_back("{}");
  std::vector<std::string> stopped_whole = lines;
  stopped_whole.back() = R"({"end":{"runs":18,"stopped":true}})";
  std::vector<std::string> stopped_text = lines;
  stopped_text.back() = R"({"end":{"runs":18,"stopped":"yes"}})";
  nlohmann::json header = nlohmann::json::parse(lines[0]);
  header.erase("build");
  const std::string without_build = header.dump() + "\n";
  header["build"] = std::string(257, 'x');
  const std::string long_build = header.dump() + "\n";
  // A header that claims 10^15 shards (merge once listed the missing ones by
  // walking the count, and ran out of memory), with its shard's one run.
  nlohmann::json huge = nlohmann::json::parse(lines[0]);
  huge["shard"]["count"] = uint64_t{1000000000000000};
  const std::string huge_count =
      huge.dump() + "\n" + lines[1] + "\n" + R"({"end":{"runs":1}})" + "\n";
  huge["shard"]["count"] = kMaxShards + 1;
  const std::string one_over =
      huge.dump() + "\n" + lines[1] + "\n" + R"({"end":{"runs":1}})" + "\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ":1: empty"},
      {"hello\n", ":1: not a lockstep explore result file"},
      {std::string("\x00\xff\xfe garbage", 11), ":1: not a lockstep explore result file"},
      {std::string(100000, '[') + "\n", ":1: not a lockstep explore result file"},
      {"{\"lockstep_explore_results\": 3}\n", ":1: the header needs shard.index"},
      {"{\"lockstep_explore_results\": 2}\n", ":1: result file format 2; this lockstep reads 3"},
      {without_build, ":1: the header needs build (a string of at most 256 bytes)"},
      {long_build, ":1: the header needs build (a string of at most 256 bytes)"},
      {huge_count,
       ":1: shard 0 of 1000000000000000 does not exist (a count is in [1, 1048576] and an "
       "index below it)"},
      {one_over, ":1: shard 0 of 1048577 does not exist"},
      {join(truncated), ":19: truncated: no end line"},
      {join(truncated).substr(0, join(truncated).size() - 30),
       ":19: truncated: the file ends inside this line"},
      {lines[0].substr(0, lines[0].size() / 2), ":1: truncated: the file ends inside this line"},
      {join(edited), ":3: run 1 is 'tp4-ep2-qwen3-h200' seed 7"},
      {join(bad_verdict), ":4: verdict 'fine' is not a verdict"},
      {join(swapped), ":3: run 2 where this shard's run 1 belongs (its run #2)"},
      {join(stopped_whole), ":20: shard 0 of 1 stopped after 18 runs, but it has 18"},
      {join(stopped_text), ":20: the end line's stopped must be true or false"},
      {join(after_end), ":21: text after the end line"},
      {lines[0] + "\n" + std::string(2000, '{') + "\n", ":2: not a JSON object"},
  };
  const std::string hdir = FreshDir("hostile");
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::string path = absl::StrFormat("%s/shard-%04d-of-0001.jsonl", hdir, 0);
    WriteFile(path, cases[c].first);
    const Result r = RunLockstep({"merge", path});
    EXPECT_EQ(r.code, kExitUsage) << c << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(path)) << c;
    EXPECT_THAT(r.err, HasSubstr(cases[c].second)) << c;
  }
  // A directory without result files, and one that is not there.
  Result r = RunLockstep({"merge", FreshDir("empty")});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("no shard-*-of-*.jsonl result files in it"));
  r = RunLockstep({"merge", hdir + "/nothing.jsonl"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr(hdir + "/nothing.jsonl: cannot read"));
}

}  // namespace
}  // namespace lockstep::cli
