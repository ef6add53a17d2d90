// A two-shot call's result, gathered once for the group
// (SimWorkspace::GatheredResult): a member whose stores are the group's runs
// ends the call sharing the group's list; any other member ends it with
// exactly the runs it stored, as when every member wrote its own. The stores
// are made here through LamportMem directly, in orders the scheduler can
// give, with the divergences a wrong layout, a stale read or a failed poll
// leave: the catalogue's verdicts and trace hashes (tests/golden) rest on
// outputs being what each member read.

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sim/memory/data.h"
#include "sim/memory/workspace_memory.h"
#include "tests/sim/sim_test_util.h"

namespace lockstep {
namespace {

constexpr int kMembers = 4;
constexpr int64_t kElems = 64;
constexpr int64_t kOwnerElems = kElems / kMembers;

// One member's view of a two-shot call: its input, output and memory policy.
struct Member {
  SimTensor in;
  SimTensor out;
  std::unique_ptr<LamportMem> mem;
};

class GatheredResultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = lockstep::testing::MakeTp4RunContext("gathered-result-unit", /*run_seed=*/5,
                                                /*exact_provenance=*/false);
    ASSERT_NE(run_, nullptr);
    ctx_ = run_->ctx.get();
    ws_ = std::make_unique<SimWorkspace>(*ctx_, "ws", WorkspaceKind::kAttnTp,
                                         std::vector<int>{0, 1, 2, 3}, GroupId{0},
                                         WorkspaceCapacity{1, kElems, DType::kBf16});
    for (int m = 0; m < kMembers; ++m) {
      members_.push_back(std::make_unique<Member>());
      Member& member = *members_.back();
      member.in = MakeInput(*ctx_, m, /*instance=*/3, kElems);
      member.mem =
          std::make_unique<LamportMem>(*ws_, m, member.in, member.out,
                                       /*fp32_acc=*/false, protocol::SentinelTest::kExactBits,
                                       /*bounded=*/true);
      member.mem->GatherWithGroup();
    }
  }

  // Owner o's reduced range as every member reads it: one piece.
  static SimChunk OwnerValue(int o, uint64_t key = 0) {
    SimChunk c;
    Piece p;
    p.value.key_sum = key != 0 ? key : 1000 + static_cast<uint64_t>(o);
    p.value.count = kMembers;
    p.value.bits = 77 + static_cast<uint64_t>(o);
    p.src = o * kOwnerElems;
    p.len = kOwnerElems;
    c.pieces.push_back(p);
    c.len = kOwnerElems;
    return c;
  }
  void Store(int m, int o, const SimChunk& v) {
    members_[static_cast<size_t>(m)]->mem->StoreOutput(o * kOwnerElems, v);
  }
  void StoreAll(int m) {
    for (int o = 0; o < kMembers; ++o) Store(m, o, OwnerValue(o));
  }
  void Finish(int m) { members_[static_cast<size_t>(m)]->mem->FinishGathered(); }
  const RunList::Runs& Runs(int m) const {
    return members_[static_cast<size_t>(m)]->out.runs.runs();
  }

  // Member m's output holds, in order, `want` (range, source and value).
  void ExpectRuns(int m, const std::vector<std::pair<int64_t, SimChunk>>& want) const {
    SCOPED_TRACE(::testing::Message() << "member " << m);
    std::vector<lockstep::Run> expected;
    for (const auto& [pos, chunk] : want) {
      int64_t at = pos;
      for (const Piece& p : chunk.pieces) {
        expected.push_back(lockstep::Run{at, at + p.len, p.value, p.src, 0, -1});
        at += p.len;
      }
    }
    const RunList::Runs& got = Runs(m);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      SCOPED_TRACE(::testing::Message() << "run " << k);
      EXPECT_EQ(got[k].begin, expected[k].begin);
      EXPECT_EQ(got[k].end, expected[k].end);
      EXPECT_EQ(got[k].src, expected[k].src);
      EXPECT_EQ(got[k].value.key_sum, expected[k].value.key_sum);
      EXPECT_EQ(got[k].value.count, expected[k].value.count);
      EXPECT_EQ(got[k].value.bits, expected[k].value.bits);
      EXPECT_EQ(got[k].value.flags, expected[k].value.flags);
    }
  }
  std::vector<std::pair<int64_t, SimChunk>> Owners() const {
    std::vector<std::pair<int64_t, SimChunk>> all;
    for (int o = 0; o < kMembers; ++o) all.emplace_back(o * kOwnerElems, OwnerValue(o));
    return all;
  }

  std::unique_ptr<lockstep::testing::TestRunContext> run_;
  SimContext* ctx_ = nullptr;
  std::unique_ptr<SimWorkspace> ws_;
  std::vector<std::unique_ptr<Member>> members_;
};

TEST_F(GatheredResultTest, MembersThatReadTheSameRunsShareOneList) {
  // Interleaved as the scheduler may: member 1 is first to reach owners 1-3.
  Store(0, 0, OwnerValue(0));
  Store(1, 0, OwnerValue(0));
  Store(1, 1, OwnerValue(1));
  Store(2, 0, OwnerValue(0));
  Store(0, 1, OwnerValue(1));
  Store(1, 2, OwnerValue(2));
  Store(1, 3, OwnerValue(3));
  Finish(1);
  for (int o = 1; o < kMembers; ++o) Store(2, o, OwnerValue(o));
  Store(0, 2, OwnerValue(2));
  Store(0, 3, OwnerValue(3));
  StoreAll(3);
  Finish(0);
  Finish(2);
  Finish(3);
  for (int m = 0; m < kMembers; ++m) {
    ExpectRuns(m, Owners());
    EXPECT_EQ(Runs(m).begin(), Runs(0).begin()) << "member " << m << " keeps a list of its own";
  }
}

TEST_F(GatheredResultTest, AMemberThatReadOtherDataKeepsExactlyWhatItStored) {
  StoreAll(0);
  Finish(0);
  // Member 1 reads other data for owner 2 (a stale slot, another call's sum).
  std::vector<std::pair<int64_t, SimChunk>> mine = Owners();
  mine[2].second = OwnerValue(2, /*key=*/5);
  for (const auto& [pos, chunk] : mine) members_[1]->mem->StoreOutput(pos, chunk);
  Finish(1);
  // Member 2 reads owner 0's range as two pieces (ranks that disagreed on
  // the layout), then the group's runs.
  std::vector<std::pair<int64_t, SimChunk>> split = Owners();
  SimChunk two = OwnerValue(0);
  two.pieces.push_back(two.pieces.front());
  two.pieces[0].len = 4;
  two.pieces[1].len = kOwnerElems - 4;
  two.pieces[1].src += 4;
  two.pieces[1].value.key_sum = 9;
  split[0].second = two;
  for (const auto& [pos, chunk] : split) members_[2]->mem->StoreOutput(pos, chunk);
  Finish(2);
  StoreAll(3);
  Finish(3);
  ExpectRuns(0, Owners());
  ExpectRuns(1, mine);
  ExpectRuns(2, split);
  ExpectRuns(3, Owners());
  EXPECT_NE(Runs(1).begin(), Runs(0).begin());
  EXPECT_NE(Runs(2).begin(), Runs(0).begin());
  EXPECT_EQ(Runs(3).begin(), Runs(0).begin()) << "member 3 matched every run";
}

TEST_F(GatheredResultTest, AMemberThatStoppedEarlyHoldsOnlyWhatItStored) {
  // Member 0 stops after owner 1 (a poll failed) before anyone went further;
  // the others complete the list after it finished.
  Store(0, 0, OwnerValue(0));
  Store(0, 1, OwnerValue(1));
  Finish(0);
  StoreAll(1);
  Finish(1);
  // Member 2 stops after owner 0, once the list is complete.
  Store(2, 0, OwnerValue(0));
  Finish(2);
  // Member 3 stored nothing.
  Finish(3);
  std::vector<std::pair<int64_t, SimChunk>> two = Owners();
  two.resize(2);
  std::vector<std::pair<int64_t, SimChunk>> one = Owners();
  one.resize(1);
  ExpectRuns(0, two);
  ExpectRuns(1, Owners());
  ExpectRuns(2, one);
  ExpectRuns(3, {});
}

TEST_F(GatheredResultTest, AStoreBeforeTheListsEndDoesNotChangeTheGroupsRuns) {
  Store(0, 0, OwnerValue(0));
  Store(0, 1, OwnerValue(1));
  // Member 1 matches both runs, then stores into owner 1's range again
  // (another layout): that cannot be the group's next run, and must not
  // change the runs the others match.
  Store(1, 0, OwnerValue(0));
  Store(1, 1, OwnerValue(1));
  SimChunk odd = OwnerValue(3);
  odd.pieces[0].len = odd.len = 8;
  members_[1]->mem->StoreOutput(kOwnerElems + 4, odd);
  Finish(1);
  Store(0, 2, OwnerValue(2));
  Store(0, 3, OwnerValue(3));
  Finish(0);
  StoreAll(2);
  Finish(2);
  // Member 1: owner 1's range cut around what it stored last.
  SimChunk left = OwnerValue(1);
  left.pieces[0].len = left.len = 4;
  SimChunk right = OwnerValue(1);
  right.pieces[0].src += 12;
  right.pieces[0].len = right.len = 4;
  ExpectRuns(
      1,
      {{0, OwnerValue(0)}, {kOwnerElems, left}, {kOwnerElems + 4, odd}, {kOwnerElems + 12, right}});
  ExpectRuns(0, Owners());
  ExpectRuns(2, Owners());
  EXPECT_EQ(Runs(2).begin(), Runs(0).begin());
}

TEST_F(GatheredResultTest, TheNextCallGathersAFreshList) {
  for (int m = 0; m < kMembers; ++m) {
    StoreAll(m);
    Finish(m);
  }
  // The second call (the call numbers moved on), with new sums: its members
  // share a list of their own, not the first call's.
  std::vector<SimTensor> outs(2);
  for (int m = 0; m < 2; ++m) {
    ++ws_->State(m).calls;
    LamportMem mem(*ws_, m, members_[static_cast<size_t>(m)]->in, outs[static_cast<size_t>(m)],
                   /*fp32_acc=*/false, protocol::SentinelTest::kExactBits, /*bounded=*/true);
    mem.GatherWithGroup();
    for (int o = 0; o < kMembers; ++o) {
      mem.StoreOutput(o * kOwnerElems, OwnerValue(o, 500 + static_cast<uint64_t>(o)));
    }
    mem.FinishGathered();
  }
  for (const SimTensor& out : outs) {
    ASSERT_EQ(out.runs.runs().size(), size_t{kMembers});
    EXPECT_EQ(out.runs.runs()[1].value.key_sum, 501u);
    EXPECT_NE(out.runs.runs().begin(), Runs(0).begin());
  }
  EXPECT_EQ(outs[1].runs.runs().begin(), outs[0].runs.runs().begin());
  ExpectRuns(0, Owners());
}

}  // namespace
}  // namespace lockstep
