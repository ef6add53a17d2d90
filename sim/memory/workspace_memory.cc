#include "sim/memory/workspace_memory.h"

#include <algorithm>
#include <cassert>

#include "absl/strings/str_format.h"
#include "kernels/protocol/kernel_flags.h"
#include "kernels/protocol/one_shot.h"
#include "kernels/protocol/two_shot.h"
#include "sim/memory/relaxed_visibility.h"

namespace lockstep {

SimWorkspace::SimWorkspace(SimContext& ctx, std::string name, WorkspaceKind kind,
                           std::vector<int> peers, GroupId group, WorkspaceCapacity capacity)
    : ctx_(ctx),
      name_(std::move(name)),
      kind_(kind),
      peers_(std::move(peers)),
      group_(group),
      capacity_(capacity),
      members_(peers_.size()),
      index_(peers_) {}

int SimWorkspace::MemberOf(int rank) const { return index_.Find(rank); }

namespace {

// The two-shot protocol, its result gathered once for the group: a piece per
// owner in owner order, the same for every member that read the same pushes.
// (Out of line: with it in RunAllReduce, the one-shot path that GCC inlines
// there ran 3 % slower on sim_bench's fused row, for no instruction of its
// own.)
[[gnu::noinline]] protocol::ProtocolStatus TwoShotGathered(LamportMem& mem,
                                                           const protocol::AllReduceArgs& args) {
  mem.GatherWithGroup();
  const protocol::ProtocolStatus status = protocol::TwoShotAllReduce(mem, args);
  mem.FinishGathered();
  return status;
}

}  // namespace

protocol::ProtocolStatus SimWorkspace::RunAllReduce(int member, const DecisionRecord& d,
                                                    const SimTensor& in, SimTensor& out) {
  protocol::AllReduceArgs args;
  protocol::ApplyKernelFlags(d.kernel_flags, args);
  args.rank = member;
  args.world = static_cast<int32_t>(peers_.size());
  args.elems = in.elems;
  args.elem = ctx_.elem;
  args.ftz = ctx_.scenario.workload.ftz || (ctx_.faults != nullptr && ctx_.faults->ForcesFtz());
  LamportMem mem(*this, member, in, out, d.fp32_acc, args.sentinel,
                 (d.kernel_flags & kBoundedWaits) != 0);
  out.elems = in.elems;
  const protocol::ProtocolStatus status = d.algorithm == Algorithm::kTwoShot
                                              ? TwoShotGathered(mem, args)
                                              : protocol::OneShotAllReduce(mem, args);
  // The kernel's end is a full fence: what it stored is visible everywhere.
  if (ctx_.relaxed != nullptr) ctx_.relaxed->Flush(peers_[static_cast<size_t>(member)]);
  return status;
}

void SimWorkspace::Rebind(std::vector<int> peers, GroupId group, uint32_t generation) {
  peers_ = std::move(peers);
  group_ = group;
  generation_ = generation;
  members_.assign(peers_.size(), Member{});
  index_.Reset(peers_);
  gathered_.reset();  // its calls' numbers start again
}

bool SimWorkspace::WaitsOnLostWrite(int, int64_t detail) const {
  const Member& m = members_[static_cast<size_t>(detail)];
  if (m.waiter.writer < 0) return false;
  for (const LostWrite& w : lost_) {
    if (w.target == static_cast<int32_t>(detail) && w.writer == m.waiter.writer &&
        w.epoch == m.state.calls + 1) {
      return true;
    }
  }
  return false;
}

bool SimWorkspace::WaitIsBounded(int, int64_t detail) const {
  return members_[static_cast<size_t>(detail)].waiter.bounded;
}

std::string SimWorkspace::DescribeWait(int rank, int64_t detail) const {
  const Member& m = members_[static_cast<size_t>(detail)];
  const Waiter& w = m.waiter;
  const int writer = w.writer >= 0 ? peers_[static_cast<size_t>(w.writer)] : -1;
  return absl::StrFormat(
      "rank %d polls fused workspace %s buffer %d, elements [%d,%d), for the push of rank %d "
      "(call %d on this workspace)",
      rank, name_, w.buffer, w.offset, w.offset + w.len, writer, m.state.calls + 1);
}

std::vector<int> SimWorkspace::WaitsOn(int, int64_t detail) const {
  const Waiter& w = members_[static_cast<size_t>(detail)].waiter;
  if (w.writer < 0) return {};
  return {peers_[static_cast<size_t>(w.writer)]};
}

void LamportMem::Clear(uint32_t buffer, int64_t offset, int64_t len) {
  // A scheduling point: on the GPU a peer runs on while this rank's pushes
  // land, so a peer may finish this call and push its next one before this
  // rank clears (the race the three-buffer rotation is there for).
  ctx_.scheduler.Yield();
  if (ctx_.faults != nullptr && ctx_.faults->DropsClear(rank_, epoch_)) return;
  ws_.members_[static_cast<size_t>(member_)].buffers[buffer].Clear(offset, offset + len);
}

bool LamportMem::VerifyCleared(uint32_t buffer, int64_t offset, int64_t len) {
  SimChunk left;
  int64_t ready = 0;
  ws_.members_[static_cast<size_t>(member_)].buffers[buffer].Read(offset, offset + len, left,
                                                                  &ready);
  if (left.pieces.empty()) return true;
  failure_ = protocol::ProtocolStatus{protocol::ProtocolError::kClearFailed, -1, buffer, offset};
  return false;
}

LamportMem::Value LamportMem::LoadInput(int64_t pos, int64_t len) {
  SimChunk chunk;
  in_.runs.Read(pos, pos + len, chunk);
  return chunk;
}

void LamportMem::Push(int32_t peer, uint32_t buffer, int64_t offset, const Value& v) {
  const int target = ws_.peers_[static_cast<size_t>(peer)];
  int64_t ready = ctx_.Clock(rank_);
  if (target != rank_) {
    ready += TransferNs(target, v.len * protocol::ElemBytes(ctx_.elem));
    if (ctx_.faults != nullptr || ctx_.relaxed != nullptr) {
      PushToPeer(peer, target, buffer, offset, v, ready);
      return;
    }
  }
  ws_.Store(rank_, peer, buffer, offset, v, ready);
}

int64_t LamportMem::TransferNs(int target, int64_t bytes) {
  // The link this push takes (looked up per push: a table of every pair
  // would grow with the square of the peer set), and its time for this size
  // (kept per link class: a call pushes one size to every peer).
  const HopClass hop = ctx_.hardware.Hop(rank_, target);
  TransferTime& time = transfer_ns_[static_cast<size_t>(hop)];
  if (time.bytes != bytes) {
    const HopSpec& spec = ctx_.hardware.Spec(hop);
    time.bytes = bytes;
    time.ns = static_cast<int64_t>(spec.latency_us * 1e3 +
                                   static_cast<double>(bytes) / spec.bandwidth_gbps + 0.5);
  }
  return time.ns;
}

void LamportMem::PushToPeer(int32_t peer, int target, uint32_t buffer, int64_t offset,
                            const Value& v, int64_t ready) {
  if (ctx_.faults != nullptr) {
    if (ctx_.faults->DropsPush(rank_, target, epoch_)) {
      ws_.lost_.push_back({member_, peer, epoch_});
      return;
    }
    if (const int delay = ctx_.faults->DelaysPush(rank_, target, epoch_); delay > 0) {
      // The store lands after `delay` more scheduling steps.
      SimWorkspace* ws = &ws_;
      const int writer = rank_;
      ctx_.Defer(static_cast<uint64_t>(delay), [ws, writer, peer, buffer, offset, v, ready] {
        ws->Store(writer, peer, buffer, offset, v, ready);
      });
      return;
    }
  }
  if (ctx_.relaxed != nullptr) {
    // Relaxed memory: the push reaches the peer late, out of order with this
    // rank's other pushes. It lands whole: every poll reads a push's whole
    // range, and a vector not yet landed still holds the sentinel, so pieces
    // landing apart would show only as the last one landing. The Lamport
    // protocols need no ordering: every element is its own flag.
    SimWorkspace* ws = &ws_;
    const int writer = rank_;
    ctx_.relaxed->Store(
        ctx_.scheduler.steps(), writer, target,
        StoreTarget{ws, static_cast<int64_t>(peer) * protocol::kLamportBuffers + buffer, offset,
                    offset + v.len},
        [ws, writer, peer, buffer, offset, v, ready] {
          ws->Store(writer, peer, buffer, offset, v, ready);
        });
    return;
  }
  ws_.Store(rank_, peer, buffer, offset, v, ready);
}

void SimWorkspace::Store(int writer, int32_t peer, uint32_t buffer, int64_t offset,
                         const SimChunk& v, int64_t ready_ns) {
  Member& m = members_[static_cast<size_t>(peer)];
  m.buffers[buffer].Write(offset, v, ready_ns, writer);
  Waiter& w = m.waiter;
  if (w.active && w.buffer == buffer && offset < w.offset + w.len && w.offset < offset + v.len) {
    w.active = false;
    ctx_.scheduler.Wake(peers_[static_cast<size_t>(peer)]);
  }
}

void LamportMem::GatherWithGroup() {
  std::shared_ptr<SimWorkspace::GatheredResult>& group = ws_.gathered_;
  if (group == nullptr || group->epoch != epoch_ || group->elems != in_.elems) {
    // The first member of this call (or one whose call the others do not
    // share: it gathers alone).
    group = std::make_shared<SimWorkspace::GatheredResult>();
    group->epoch = epoch_;
    group->elems = in_.elems;
    group->runs.Reserve(ws_.peers_.size());
  }
  gathered_ = group;
  matched_ = 0;
}

bool LamportMem::MatchGathered(int64_t pos, const Value& v) {
  RunList& group = gathered_->runs;
  if (v.pieces.size() == 1 && v.pieces.front().len == v.len && v.len > 0) {
    const Piece& p = v.pieces.front();
    const RunList::Runs& runs = group.runs();
    if (matched_ == runs.size()) {
      // The first member here: its run becomes the group's, appended (a
      // store before the list's end would change runs others matched).
      if (runs.empty() || runs.back().end <= pos) {
        group.Write(Run{pos, pos + v.len, p.value, p.src, ctx_.Clock(rank_), rank_});
        ++matched_;
        return true;
      }
    } else {
      const Run& r = runs[matched_];
      if (r.begin == pos && r.end == pos + v.len && r.src == p.src && r.value == p.value) {
        ++matched_;
        return true;
      }
    }
  }
  TakeMatchedRuns();
  return false;
}

void LamportMem::TakeMatchedRuns() {
  // The output holds nothing yet: every store so far was matched. (Not
  // through RunList::Reset: a caller more made GCC stop inlining it into
  // SimComm::Complete, +16 instructions a rank-call of the NCCL row.)
  const RunList::Runs& runs = gathered_->runs.runs();
  assert(out_.runs.runs().empty());
  out_.runs.Reserve(ws_.peers_.size());
  for (size_t k = 0; k < matched_ && k < runs.size(); ++k) out_.runs.Write(runs[k]);
  gathered_.reset();
}

void LamportMem::FinishGathered() {
  if (gathered_ == nullptr) return;
  if (matched_ == gathered_->runs.runs().size()) {
    out_.runs = RunList::SharedWith(gathered_->runs);
    gathered_.reset();
    return;
  }
  TakeMatchedRuns();
}

bool LamportMem::Wait(uint32_t buffer, int64_t offset, int64_t len, int32_t writer, Value* out) {
  SimWorkspace::Member& m = ws_.members_[static_cast<size_t>(member_)];
  LamportBuffer& runs = m.buffers[buffer];
  // The poll's timer starts now (virtual time), as the kernel's does.
  const int64_t deadline = ctx_.Clock(rank_) + wait_budget_ns_;
  while (true) {
    int64_t ready = 0;
    if (runs.ReadFresh(offset, offset + len, *out, &ready) &&
        !ChunkHasSentinel(*out, sentinel_, ftz_)) {
      if (ready > deadline) {
        // The push landed after the budget: on the GPU the wait has already
        // given up, naming the writer, and the call fails at the deadline.
        ctx_.AdvanceTo(rank_, deadline);
        failure_ =
            protocol::ProtocolStatus{protocol::ProtocolError::kWaitExpired, writer, buffer, offset};
        return false;
      }
      ctx_.AdvanceTo(rank_, ready);
      return true;
    }
    m.waiter = SimWorkspace::Waiter{true, buffer, offset, len, writer, bounded_};
    if (!ctx_.scheduler.Block(BlockReason{&ws_, member_, ctx_.Clock(rank_)})) {
      m.waiter.active = false;
      return false;  // the run is shutting down: abandon the protocol
    }
  }
}

}  // namespace lockstep
