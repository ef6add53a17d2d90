#include <algorithm>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/memory/lamport_buffer.h"
#include "sim/memory/relaxed_visibility.h"
#include "sim/memory/run_list.h"
#include "sim/runtime/rng.h"
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

// What a run list stands for, element by element: each element's value,
// source position, ready time and writer, or the sentinel. Random writes
// and clears of every overlap (inside one run, across several, covering
// all, in gaps) must leave a list that reads as this model does, sorted,
// disjoint and without empty runs.
TEST(RunListTest, WritesAndClearsMatchAnElementModel) {
  struct Element {
    bool set = false;
    uint64_t key = 0;
    int64_t src = 0, ready = 0;
    int32_t writer = -1;
  };
  constexpr int64_t kLen = 96;
  Rng rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    RunList runs;
    std::vector<Element> model(kLen);
    for (int op = 0; op < 60; ++op) {
      const auto a = static_cast<int64_t>(rng.Below(kLen + 1));
      const auto b = static_cast<int64_t>(rng.Below(kLen + 1));
      const int64_t begin = std::min(a, b), end = std::max(a, b);
      if (rng.Below(4) == 0) {
        runs.Clear(begin, end);
        for (int64_t e = begin; e < end; ++e) model[static_cast<size_t>(e)] = Element{};
      } else {
        lockstep::Run r =
            MakeRun(begin, end, 1 + rng.Below(1000), static_cast<int64_t>(rng.Below(500)));
        r.ready_ns = static_cast<int64_t>(rng.Below(100));
        r.writer = static_cast<int32_t>(rng.Below(8));
        runs.Write(r);
        for (int64_t e = begin; e < end; ++e) {
          model[static_cast<size_t>(e)] =
              Element{true, r.value.key_sum, r.src + (e - begin), r.ready_ns, r.writer};
        }
      }
      std::vector<Element> seen(kLen);
      int64_t last_end = 0;
      for (const lockstep::Run& r : runs.runs()) {
        ASSERT_LT(r.begin, r.end) << "trial " << trial << " op " << op;
        ASSERT_LE(last_end, r.begin) << "trial " << trial << " op " << op;
        last_end = r.end;
        for (int64_t e = r.begin; e < r.end; ++e) {
          seen[static_cast<size_t>(e)] =
              Element{true, r.value.key_sum, r.src + (e - r.begin), r.ready_ns, r.writer};
        }
      }
      for (int64_t e = 0; e < kLen; ++e) {
        const Element& want = model[static_cast<size_t>(e)];
        const Element& got = seen[static_cast<size_t>(e)];
        ASSERT_EQ(got.set, want.set) << "trial " << trial << " op " << op << " element " << e;
        if (!want.set) continue;
        ASSERT_EQ(got.key, want.key) << "trial " << trial << " op " << op << " element " << e;
        ASSERT_EQ(got.src, want.src) << "trial " << trial << " op " << op << " element " << e;
        ASSERT_EQ(got.ready, want.ready) << "trial " << trial << " op " << op << " element " << e;
        ASSERT_EQ(got.writer, want.writer) << "trial " << trial << " op " << op << " element " << e;
      }
      // A read of a random range gives the model's elements in order, the
      // unset ones skipped, and says whether it found any unset.
      const auto c = static_cast<int64_t>(rng.Below(kLen + 1));
      const auto d = static_cast<int64_t>(rng.Below(kLen + 1));
      const int64_t lo = std::min(c, d), hi = std::max(c, d);
      if (lo == hi) continue;
      SimChunk chunk;
      int64_t ready = -1;
      const bool covered = runs.Read(lo, hi, chunk, &ready);
      ASSERT_EQ(chunk.len, hi - lo);
      bool all_set = true;
      int64_t latest = 0;
      std::vector<Element> read;
      for (int64_t e = lo; e < hi; ++e) {
        const Element& want = model[static_cast<size_t>(e)];
        all_set = all_set && want.set;
        if (want.set) latest = std::max(latest, want.ready);
      }
      for (const Piece& p : chunk.pieces) {
        ASSERT_GT(p.len, 0) << "trial " << trial << " op " << op;
        for (int64_t k = 0; k < p.len; ++k) {
          read.push_back(Element{true, p.value.key_sum, p.src + k, 0, -1});
        }
      }
      size_t next = 0;
      for (int64_t e = lo; e < hi; ++e) {
        const Element& want = model[static_cast<size_t>(e)];
        if (!want.set) continue;
        ASSERT_LT(next, read.size()) << "trial " << trial << " op " << op << " element " << e;
        ASSERT_EQ(read[next].key, want.key)
            << "trial " << trial << " op " << op << " element " << e;
        ASSERT_EQ(read[next].src, want.src)
            << "trial " << trial << " op " << op << " element " << e;
        ++next;
      }
      ASSERT_EQ(next, read.size()) << "trial " << trial << " op " << op << ": extra elements";
      ASSERT_EQ(covered, all_set) << "trial " << trial << " op " << op;
      if (covered) {
        ASSERT_EQ(ready, latest) << "trial " << trial << " op " << op;
      }
    }
  }
}

TEST(RunListTest, SharedListsReadAlikeAndAWriteCopiesOnlyTheWrittenOne) {
  RunList gathered;
  for (int64_t m = 0; m < 40; ++m)
    gathered.Write(MakeRun(m * 4, m * 4 + 4, static_cast<uint64_t>(100 + m)));
  RunList a = RunList::SharedWith(gathered);
  RunList b = RunList::SharedWith(gathered);
  ASSERT_EQ(a.runs().size(), 40u);
  EXPECT_EQ(&a.runs(), &b.runs()) << "one list, not copies";
  EXPECT_EQ(&a.runs(), &gathered.runs());
  SimChunk chunk;
  ASSERT_TRUE(b.Read(38, 42, chunk));
  ASSERT_EQ(chunk.pieces.size(), 2u);
  EXPECT_EQ(chunk.pieces[1].value.key_sum, 110u);
  EXPECT_EQ(b.FirstEndingAfter(41), 10u);
  // A write to one copy leaves the others as they were.
  a.Write(MakeRun(0, 160, 7));
  ASSERT_EQ(a.runs().size(), 1u);
  EXPECT_EQ(b.runs().size(), 40u);
  EXPECT_EQ(gathered.runs()[5].value.key_sum, 105u);
  b.Clear(0, 8);
  EXPECT_EQ(b.runs().size(), 38u);
  EXPECT_EQ(gathered.runs().size(), 40u);
  gathered.Reset();
  EXPECT_TRUE(gathered.runs().empty());
  EXPECT_EQ(b.runs().size(), 38u);
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

TEST(LamportBufferTest, SlotsOfAnyLengthReadAsARunListDoes) {
  // The slot table finds a slot by multiplying by the length's inverse, not
  // by dividing: lengths of one, powers of two and odd ones, slots far out.
  for (const int64_t len : {int64_t{1}, int64_t{3}, int64_t{64}, int64_t{7168}, int64_t{100003}}) {
    SCOPED_TRACE(::testing::Message() << "slot length " << len);
    LamportBuffer b;
    RunList reference;
    const std::vector<int64_t> slots = {0, 1, 2, 9, 1000, 4294};
    for (const int64_t slot : slots) {
      const lockstep::Run r =
          MakeRun(slot * len, (slot + 1) * len, static_cast<uint64_t>(slot + 7));
      b.Write(r);
      reference.Write(r);
    }
    EXPECT_FALSE(b.general());
    // Whole slots, present and absent, through Read and ReadFresh, and
    // ranges that start or end inside a slot.
    for (const int64_t slot : {0, 1, 2, 3, 8, 9, 10, 999, 1000, 1001, 4293, 4294, 4295}) {
      for (auto [lo, hi] : {std::pair<int64_t, int64_t>{slot * len, (slot + 1) * len},
                            {slot * len + len / 2, (slot + 2) * len}}) {
        SimChunk x, y, fresh;
        fresh.pieces.push_back(Piece{});  // a previous poll's value, overwritten
        int64_t rx = 0, ry = 0, rf = 0;
        const bool covered = reference.Read(lo, hi, y, &ry);
        EXPECT_EQ(b.Read(lo, hi, x, &rx), covered) << lo << "," << hi;
        EXPECT_EQ(b.ReadFresh(lo, hi, fresh, &rf), covered) << lo << "," << hi;
        for (const SimChunk* got : {&x, &fresh}) {
          ASSERT_EQ(got->pieces.size(), y.pieces.size()) << lo << "," << hi;
          for (size_t i = 0; i < y.pieces.size(); ++i) {
            EXPECT_EQ(got->pieces[i].value.key_sum, y.pieces[i].value.key_sum);
            EXPECT_EQ(got->pieces[i].src, y.pieces[i].src);
            EXPECT_EQ(got->pieces[i].len, y.pieces[i].len);
          }
        }
      }
    }
  }
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

// Pushes of several pieces (rows of different sources), whole-slot and
// cutting clears, and reads of every kind against a RunList given the same
// writes piece by piece: the same pieces, coverage and ready times, whether
// the buffer keeps them in its slot table or has moved to the general form.
TEST(LamportBufferTest, PushesOfSeveralPiecesReadAsARunListDoes) {
  Rng rng(5);
  int slot_table_reads = 0;
  const NumericArray arrays[2] = {std::make_shared<const NumericBits>(NumericBits{0, {1, 2}}),
                                  std::make_shared<const NumericBits>(NumericBits{3, {4}})};
  const auto expect_same_value = [](const SimValue& got, const SimValue& want) {
    EXPECT_EQ(got.key_sum, want.key_sum);
    EXPECT_EQ(got.count, want.count);
    EXPECT_EQ(got.exact, want.exact);
    EXPECT_EQ(got.bits, want.bits);
    EXPECT_EQ(got.numeric, want.numeric);
    EXPECT_EQ(got.numeric_base, want.numeric_base);
    EXPECT_EQ(got.flags, want.flags);
  };
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t slot = 8 + static_cast<int64_t>(rng.Below(3)) * 4;  // 8, 12 or 16
    LamportBuffer b;
    RunList reference;
    uint64_t key = 1;
    for (int op = 0; op < 40; ++op) {
      const auto s = static_cast<int64_t>(rng.Below(6));
      if (rng.Below(5) == 0) {
        // A clear of whole slots, or one that cuts a slot.
        const int64_t lo = s * slot + (rng.Below(3) == 0 ? 3 : 0);
        const int64_t hi = lo + slot * (1 + static_cast<int64_t>(rng.Below(2)));
        b.Clear(lo, hi);
        reference.Clear(lo, hi);
      } else {
        // A push of 1 to 3 pieces filling a slot, now and then a
        // misaligned or longer one, and empty pieces among them.
        const int64_t begin = s * slot + (rng.Below(8) == 0 ? 1 : 0);
        const int64_t len = rng.Below(8) == 0 ? slot + 4 : slot;
        // Half of them one piece, as a Lamport push of one run is: the
        // slot table's own path.
        const bool whole = rng.Below(2) == 0;
        SimChunk chunk;
        int64_t left = len;
        while (left > 0) {
          const int64_t n =
              whole || chunk.pieces.size() == 2
                  ? left
                  : std::min<int64_t>(
                        left, 1 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(left))));
          Piece p;
          p.value.key_sum = key++;
          // Every field of the value, numeric arrays and bases among them
          // (a table slot keeps them apart from the rest).
          p.value.count = static_cast<uint32_t>(rng.Below(9));
          p.value.exact = static_cast<uint32_t>(rng.Below(9));
          p.value.bits = rng.Next();
          p.value.flags = static_cast<uint8_t>(rng.Below(8));
          if (rng.Below(4) == 0) p.value.numeric = arrays[rng.Below(2)];
          if (rng.Below(4) == 0) p.value.numeric_base = static_cast<int64_t>(rng.Below(7));
          p.src = static_cast<int64_t>(rng.Below(100));
          p.len = n;
          chunk.pieces.push_back(p);
          if (rng.Below(6) == 0) chunk.pieces.push_back(Piece{});  // an empty piece
          left -= n;
        }
        chunk.len = len;
        const auto ready = static_cast<int64_t>(rng.Below(50));
        const auto writer = static_cast<int32_t>(rng.Below(8));
        b.Write(begin, chunk, ready, writer);
        int64_t at = begin;
        for (const Piece& p : chunk.pieces) {
          reference.Write(lockstep::Run{at, at + p.len, p.value, p.src, ready, writer});
          at += p.len;
        }
      }
      if (!b.general()) ++slot_table_reads;
      for (int64_t lo = 0; lo < 7 * slot; lo += slot / 2) {
        for (const int64_t hi : {lo + slot, lo + slot / 2, lo + 2 * slot}) {
          // ReadFresh into a value a previous poll left with no piece, one
          // (the inline case) or two.
          SimChunk x, y, fresh[3];
          // A value of one piece that a previous poll left holding an array.
          SimValue stale;
          stale.numeric = arrays[0];
          stale.numeric_base = 2;
          fresh[1].pieces.push_back(Piece{stale, 0, 0});
          fresh[2].pieces.push_back(Piece{});
          fresh[2].pieces.push_back(Piece{});
          int64_t rx = 0, ry = 0, rf = 0;
          const bool covered = reference.Read(lo, hi, y, &ry);
          ASSERT_EQ(b.Read(lo, hi, x, &rx), covered) << trial << " " << op << " " << lo;
          for (SimChunk& f : fresh) {
            ASSERT_EQ(b.ReadFresh(lo, hi, f, &rf), covered) << trial << " " << op << " " << lo;
            EXPECT_EQ(rf, ry);
          }
          for (const SimChunk* got : {&x, &fresh[0], &fresh[1], &fresh[2]}) {
            ASSERT_EQ(got->pieces.size(), y.pieces.size()) << trial << " " << op << " " << lo;
            EXPECT_EQ(got->len, y.len);
            for (size_t i = 0; i < y.pieces.size(); ++i) {
              expect_same_value(got->pieces[i].value, y.pieces[i].value);
              EXPECT_EQ(got->pieces[i].src, y.pieces[i].src);
              EXPECT_EQ(got->pieces[i].len, y.pieces[i].len);
            }
          }
          EXPECT_EQ(rx, ry);
        }
      }
      EXPECT_EQ(b.Empty(), reference.runs().empty());
    }
  }
  EXPECT_GT(slot_table_reads, 100) << "the slot table was hardly exercised";
}

TEST(LamportBufferTest, TableSlotsGiveBackEveryFieldOfWhatWasPushed) {
  // Lamport pushes and polls of whole slots only, so the buffer never leaves
  // its slot table: a slot keeps a value's numeric array and base apart from
  // its other fields, and a push of a value without them must let go of the
  // ones the slot held before.
  Rng rng(11);
  const NumericArray arrays[2] = {std::make_shared<const NumericBits>(NumericBits{0, {1, 2}}),
                                  std::make_shared<const NumericBits>(NumericBits{3, {4}})};
  constexpr int64_t kSlot = 16;
  int numeric_overwritten = 0;
  for (int trial = 0; trial < 20; ++trial) {
    LamportBuffer b;
    RunList reference;
    std::vector<bool> numeric(6, false);
    for (int op = 0; op < 60; ++op) {
      const auto s = static_cast<int64_t>(rng.Below(6));
      if (rng.Below(6) == 0) {
        b.Clear(s * kSlot, (s + 1) * kSlot);
        reference.Clear(s * kSlot, (s + 1) * kSlot);
        continue;
      }
      Piece p;
      p.value.key_sum = rng.Next();
      p.value.count = static_cast<uint32_t>(rng.Below(9));
      p.value.exact = static_cast<uint32_t>(rng.Below(9));
      p.value.bits = rng.Next();
      p.value.flags = static_cast<uint8_t>(rng.Below(8));
      if (rng.Below(3) == 0) p.value.numeric = arrays[rng.Below(2)];
      if (rng.Below(3) == 0) p.value.numeric_base = 1 + static_cast<int64_t>(rng.Below(7));
      p.src = static_cast<int64_t>(rng.Below(100));
      p.len = kSlot;
      const bool has = p.value.numeric != nullptr || p.value.numeric_base != 0;
      if (numeric[static_cast<size_t>(s)] && !has) ++numeric_overwritten;
      numeric[static_cast<size_t>(s)] = has;
      const auto ready = static_cast<int64_t>(rng.Below(50));
      const auto writer = static_cast<int32_t>(rng.Below(8));
      b.Write(s * kSlot, p, ready, writer);
      reference.Write(lockstep::Run{s * kSlot, (s + 1) * kSlot, p.value, p.src, ready, writer});
      ASSERT_FALSE(b.general());
      for (int64_t slot = 0; slot < 6; ++slot) {
        SimChunk got, want;
        // A poll's value, left holding an array by an earlier poll.
        SimValue stale;
        stale.numeric = arrays[1];
        stale.numeric_base = 5;
        SimChunk fresh;
        fresh.pieces.push_back(Piece{stale, 0, 0});
        int64_t got_ready = 0, want_ready = 0, fresh_ready = 0;
        const bool covered = reference.Read(slot * kSlot, (slot + 1) * kSlot, want, &want_ready);
        ASSERT_EQ(b.Read(slot * kSlot, (slot + 1) * kSlot, got, &got_ready), covered);
        ASSERT_EQ(b.ReadFresh(slot * kSlot, (slot + 1) * kSlot, fresh, &fresh_ready), covered);
        if (!covered) continue;
        EXPECT_EQ(got_ready, want_ready);
        EXPECT_EQ(fresh_ready, want_ready);
        for (const SimChunk* c : {&got, &fresh}) {
          ASSERT_EQ(c->pieces.size(), 1u);
          const Piece& g = c->pieces[0];
          const Piece& w = want.pieces[0];
          EXPECT_EQ(g.value.key_sum, w.value.key_sum) << trial << " " << op << " " << slot;
          EXPECT_EQ(g.value.count, w.value.count);
          EXPECT_EQ(g.value.exact, w.value.exact);
          EXPECT_EQ(g.value.bits, w.value.bits);
          EXPECT_EQ(g.value.numeric, w.value.numeric) << trial << " " << op << " " << slot;
          EXPECT_EQ(g.value.numeric_base, w.value.numeric_base);
          EXPECT_EQ(g.value.flags, w.value.flags);
          EXPECT_EQ(g.src, w.src);
          EXPECT_EQ(g.len, w.len);
        }
      }
    }
  }
  EXPECT_GT(numeric_overwritten, 20) << "slots holding numeric data were hardly overwritten";
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
  bool IsKernelWait() const override { return false; }
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

// --- Relaxed visibility (memory: relaxed). ----------------------------------

// A place in a peer's memory: elements [begin, end) of region 0.
StoreTarget At(const void* object, int64_t begin, int64_t end) {
  return StoreTarget{object, 0, begin, end};
}

TEST(RelaxedVisibilityTest, AStoreIsNotVisibleUntilItLands) {
  RelaxedVisibility m(7);
  const int object = 0;
  bool landed = false;
  m.Store(10, /*writer=*/0, /*reader=*/1, At(&object, 0, 8), [&] { landed = true; });
  EXPECT_FALSE(landed) << "a store is in flight once made";
  ASSERT_EQ(m.in_flight(), 1u);
  const RelaxedVisibility::InFlight* s = m.Pending(0, 1, At(&object, 4, 5));
  ASSERT_NE(s, nullptr) << "a read of element 4 is ahead of the store";
  EXPECT_EQ(m.Pending(0, 2, At(&object, 4, 5)), nullptr) << "another reader";
  EXPECT_EQ(m.Pending(0, 1, At(&object, 8, 16)), nullptr) << "other elements";
  EXPECT_EQ(s->made, 10u);
  EXPECT_GE(s->due, 10u);
  EXPECT_LE(s->due, 10 + RelaxedVisibility::kMaxDelaySteps);
  const uint64_t due = s->due;
  EXPECT_FALSE(m.Deliver(due - 1, false));
  EXPECT_FALSE(landed) << "not before its step";
  EXPECT_TRUE(m.Deliver(due, false));
  EXPECT_TRUE(landed);
  EXPECT_EQ(m.in_flight(), 0u);
  EXPECT_EQ(m.landed(), 1u);
}

TEST(RelaxedVisibilityTest, StoresToDifferentPlacesLandOutOfOrder) {
  int reordered = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RelaxedVisibility m(seed);
    const int object = 0;
    std::vector<int> order;
    for (int i = 0; i < 4; ++i) {
      m.Store(0, 0, 1, At(&object, i * 8, i * 8 + 8), [&order, i] { order.push_back(i); });
    }
    m.Deliver(RelaxedVisibility::kMaxDelaySteps, false);
    ASSERT_EQ(order.size(), 4u) << "every store lands by the longest delay";
    if (!std::is_sorted(order.begin(), order.end())) ++reordered;
  }
  EXPECT_GT(reordered, 10) << "without a fence, program order is not landing order";
}

TEST(RelaxedVisibilityTest, StoresToOnePlaceLandInProgramOrder) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RelaxedVisibility m(seed);
    const int object = 0;
    std::vector<int> order;
    for (int i = 0; i < 4; ++i) {
      m.Store(static_cast<uint64_t>(i), 0, 1, At(&object, 0, 8 + i),
              [&order, i] { order.push_back(i); });
    }
    while (m.Deliver(0, /*idle=*/true)) {
    }
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3})) << "seed " << seed;
  }
}

TEST(RelaxedVisibilityTest, AReleaseMakesEveryEarlierStoreVisibleFirst) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    RelaxedVisibility m(seed);
    const int data = 0;
    const int flags = 0;
    // What each reader holds when its flag lands.
    std::vector<int> seen(3, 0);
    std::vector<int> at_flag(3, -1);
    for (int reader = 1; reader <= 2; ++reader) {
      for (int i = 0; i < 3; ++i) {
        m.Store(0, 0, reader, At(&data, i * 8, i * 8 + 8),
                [&seen, reader] { ++seen[static_cast<size_t>(reader)]; });
      }
    }
    m.Release(0);
    for (int reader = 1; reader <= 2; ++reader) {
      m.Store(1, 0, reader, At(&flags, 0, 1), [&seen, &at_flag, reader] {
        at_flag[static_cast<size_t>(reader)] = seen[static_cast<size_t>(reader)];
      });
    }
    for (uint64_t step = 0; step <= 2 * RelaxedVisibility::kMaxDelaySteps; ++step) {
      m.Deliver(step, false);
    }
    EXPECT_EQ(at_flag[1], 3) << "seed " << seed << ": reader 1 saw its flag before the data";
    EXPECT_EQ(at_flag[2], 3) << "seed " << seed << ": reader 2 saw its flag before the data";
  }
}

TEST(RelaxedVisibilityTest, WithoutTheReleaseAFlagCanOvertakeTheData) {
  int overtaken = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    RelaxedVisibility m(seed);
    const int data = 0;
    const int flags = 0;
    int seen = 0;
    int at_flag = -1;
    for (int i = 0; i < 3; ++i) m.Store(0, 0, 1, At(&data, i * 8, i * 8 + 8), [&seen] { ++seen; });
    m.Store(1, 0, 1, At(&flags, 0, 1), [&] { at_flag = seen; });
    for (uint64_t step = 0; step <= 2 * RelaxedVisibility::kMaxDelaySteps; ++step) {
      m.Deliver(step, false);
    }
    if (at_flag < 3) ++overtaken;
  }
  EXPECT_GT(overtaken, 5);
}

TEST(RelaxedVisibilityTest, AKernelEndLandsEveryStoreOfItsRankAndNoOther) {
  RelaxedVisibility m(3);
  const int object = 0;
  std::vector<int> landed;
  for (int i = 0; i < 5; ++i) {
    m.Store(0, /*writer=*/i % 2, 2, At(&object, i * 8, i * 8 + 8),
            [&landed, i] { landed.push_back(i); });
  }
  m.Flush(0);
  std::sort(landed.begin(), landed.end());
  EXPECT_EQ(landed, (std::vector<int>{0, 2, 4})) << "rank 0's stores, all of them, now";
  EXPECT_EQ(m.in_flight(), 2u) << "rank 1's stay in flight";
  EXPECT_EQ(m.Pending(0, 2, At(&object, 0, 40)), nullptr);
  EXPECT_NE(m.Pending(1, 2, At(&object, 0, 40)), nullptr);
}

TEST(RelaxedVisibilityTest, AnIdleRunLandsOneStoreAtATime) {
  RelaxedVisibility m(5);
  const int object = 0;
  int landed = 0;
  // Made at step 100: none is due at step 0.
  for (int i = 0; i < 3; ++i) m.Store(100, 0, 1, At(&object, i * 8, i * 8 + 8), [&] { ++landed; });
  EXPECT_FALSE(m.Deliver(0, false));
  EXPECT_TRUE(m.Deliver(0, /*idle=*/true));
  EXPECT_EQ(landed, 1) << "no rank can run: the next store lands, the others stay in flight";
  while (m.Deliver(0, true)) {
  }
  EXPECT_EQ(landed, 3) << "nothing is lost: an idle run lands what is still in flight";
  EXPECT_FALSE(m.Deliver(0, true)) << "and then has nothing to do";
}

TEST(RelaxedVisibilityTest, TheSameSeedDrawsTheSameDelaysAndPieces) {
  auto draws = [](uint64_t seed) {
    RelaxedVisibility m(seed);
    const int object = 0;
    std::vector<uint64_t> out;
    for (int i = 0; i < 16; ++i) {
      m.Store(0, 0, 1, At(&object, i * 8, i * 8 + 8), [] {});
      out.push_back(m.Pending(0, 1, At(&object, i * 8, i * 8 + 8))->due);
      for (int64_t c : m.Cuts(4096, 8)) out.push_back(static_cast<uint64_t>(c));
    }
    return out;
  };
  EXPECT_EQ(draws(11), draws(11));
  EXPECT_NE(draws(11), draws(12));
}

TEST(RelaxedVisibilityTest, PiecesAreWholeVectorsCoveringTheRange) {
  RelaxedVisibility m(9);
  bool split = false;
  for (int i = 0; i < 50; ++i) {
    const std::vector<int64_t> cuts = m.Cuts(1000, 8);
    ASSERT_GE(cuts.size(), 2u);
    EXPECT_EQ(cuts.front(), 0);
    EXPECT_EQ(cuts.back(), 1000);
    EXPECT_LE(cuts.size(), static_cast<size_t>(RelaxedVisibility::kMaxPieces) + 1);
    for (size_t k = 1; k + 1 < cuts.size(); ++k) {
      EXPECT_EQ(cuts[k] % 8, 0) << "a 16-byte vector of bf16 never tears";
      EXPECT_LT(cuts[k - 1], cuts[k]);
    }
    split |= cuts.size() > 2;
  }
  EXPECT_TRUE(split);
  EXPECT_EQ(m.Cuts(8, 8), (std::vector<int64_t>{0, 8})) << "one vector is one piece";
  SimChunk chunk;
  chunk.len = 30;
  chunk.pieces.push_back(Piece{SimValue{}, 100, 10});
  chunk.pieces.push_back(Piece{SimValue{}, 500, 20});
  const SimChunk mid = SubChunk(chunk, 5, 15);
  ASSERT_EQ(mid.pieces.size(), 2u);
  EXPECT_EQ(mid.len, 10);
  EXPECT_EQ(mid.pieces[0].src, 105);
  EXPECT_EQ(mid.pieces[0].len, 5);
  EXPECT_EQ(mid.pieces[1].src, 500);
  EXPECT_EQ(mid.pieces[1].len, 5);
}

}  // namespace
}  // namespace lockstep
