#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/memory/lamport_buffer.h"
#include "sim/memory/run_list.h"
#include "sim/runtime/scheduler.h"

namespace lockstep {
namespace {

Run MakeRun(int64_t begin, int64_t end, uint64_t key, int64_t src = -1) {
  Run r;
  r.begin = begin;
  r.end = end;
  r.value.key_sum = key;
  r.src = src < 0 ? begin : src;
  return r;
}

TEST(RunListTest, OverlappingWritesSplitRunsAndKeepSourceOffsets) {
  RunList runs;
  runs.Write(MakeRun(0, 100, 1));
  runs.Write(MakeRun(40, 60, 2, 0));
  ASSERT_EQ(runs.runs().size(), 3u);
  EXPECT_EQ(runs.runs()[2].begin, 60);
  EXPECT_EQ(runs.runs()[2].src, 60) << "the right remainder keeps its source position";
  SimChunk chunk;
  int64_t ready = 0;
  EXPECT_TRUE(runs.Read(30, 70, chunk, &ready));
  ASSERT_EQ(chunk.pieces.size(), 3u);
  EXPECT_EQ(chunk.pieces[1].value.key_sum, 2u);
  EXPECT_EQ(chunk.pieces[1].src, 0);
}

TEST(RunListTest, ClearLeavesTheSentinelAndReadsReportGaps) {
  RunList runs;
  runs.Write(MakeRun(0, 100, 1));
  runs.Clear(10, 20);
  EXPECT_FALSE(runs.Covered(0, 100));
  EXPECT_EQ(runs.FirstGap(0, 100), 10);
  EXPECT_TRUE(runs.Covered(20, 100));
  SimChunk chunk;
  EXPECT_FALSE(runs.Read(5, 25, chunk));
}

TEST(LamportBufferTest, AlignedSlotsStayInTheSlotTable) {
  LamportBuffer b;
  for (int p = 0; p < 8; ++p) b.Write(MakeRun(p * 64, (p + 1) * 64, static_cast<uint64_t>(p + 1)));
  EXPECT_FALSE(b.general());
  SimChunk chunk;
  int64_t ready = 0;
  EXPECT_TRUE(b.Read(3 * 64, 4 * 64, chunk, &ready));
  EXPECT_EQ(chunk.pieces.at(0).value.key_sum, 4u);
  b.Clear(0, 8 * 64);
  EXPECT_TRUE(b.Empty());
}

TEST(LamportBufferTest, MisalignedWritesBehaveExactlyLikeARunList) {
  // Two writers that disagree on the slot size: 10 and 12 elements.
  LamportBuffer b;
  RunList reference;
  for (const lockstep::Run& r : {MakeRun(0, 10, 1), MakeRun(12, 24, 2), MakeRun(10, 20, 3)}) {
    b.Write(r);
    reference.Write(r);
  }
  EXPECT_TRUE(b.general());
  for (auto [lo, hi] : {std::pair<int64_t, int64_t>{0, 12}, {12, 24}, {10, 20}, {0, 24}}) {
    SimChunk x, y;
    int64_t rx = 0, ry = 0;
    EXPECT_EQ(b.Read(lo, hi, x, &rx), reference.Read(lo, hi, y, &ry)) << lo << "," << hi;
    ASSERT_EQ(x.pieces.size(), y.pieces.size());
    for (size_t i = 0; i < x.pieces.size(); ++i) {
      EXPECT_EQ(x.pieces[i].value.key_sum, y.pieces[i].value.key_sum);
      EXPECT_EQ(x.pieces[i].src, y.pieces[i].src);
    }
  }
  b.Clear(0, 24);
  EXPECT_TRUE(b.Empty());
  EXPECT_FALSE(b.general()) << "an empty buffer returns to the slot table";
}

TEST(SchedulerTest, SameSeedGivesTheSameInterleaving) {
  auto order = [](uint64_t seed) {
    std::vector<int> trace;
    Scheduler s(4, seed, MakeRandomSchedule());
    for (int r = 0; r < 4; ++r) {
      s.Spawn(
          r,
          [&s, &trace, r] {
            for (int i = 0; i < 5; ++i) {
              trace.push_back(r);
              s.Yield();
            }
          },
          64 * 1024);
    }
    s.Run();
    EXPECT_TRUE(s.AllDone());
    return trace;
  };
  EXPECT_EQ(order(9), order(9));
  EXPECT_NE(order(9), order(10));
}

class Gate : public Waitable {
 public:
  std::string DescribeWait(int rank, int64_t) const override {
    return "rank " + std::to_string(rank) + " waits at the gate";
  }
  std::vector<int> WaitsOn(int, int64_t) const override { return {0}; }
};

TEST(SchedulerTest, BlockedRanksRunAgainOnlyWhenWoken) {
  Scheduler s(2, 1, MakeRandomSchedule());
  Gate gate;
  bool opened = false, passed = false;
  s.Spawn(
      0,
      [&] {
        opened = true;
        s.Wake(1);
      },
      64 * 1024);
  s.Spawn(
      1,
      [&] {
        while (!opened) {
          if (!s.Block(BlockReason{&gate, 0, 0})) return;
        }
        passed = true;
      },
      64 * 1024);
  s.Run();
  EXPECT_TRUE(passed);
  EXPECT_TRUE(s.AllDone());
}

TEST(SchedulerTest, ADeadlockLeavesRanksBlockedWithTheirReasons) {
  Scheduler s(2, 1, MakeRandomSchedule());
  Gate gate;
  for (int r = 0; r < 2; ++r) {
    s.Spawn(
        r,
        [&s, &gate] {
          EXPECT_FALSE(s.Block(BlockReason{&gate, 0, 0})) << "woken only by shutdown";
        },
        64 * 1024);
  }
  s.Run();
  EXPECT_THAT(s.BlockedRanks(), ::testing::ElementsAre(0, 1));
  EXPECT_EQ(s.reason(1).waitable->DescribeWait(1, 0), "rank 1 waits at the gate");
  s.Shutdown();  // both fibers return from Block() with false and finish
}

}  // namespace
}  // namespace lockstep
