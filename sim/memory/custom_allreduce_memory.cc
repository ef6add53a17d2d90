#include "sim/memory/custom_allreduce_memory.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "kernels/protocol/block_barrier.h"
#include "kernels/protocol/custom_v2.h"
#include "sim/memory/relaxed_visibility.h"

namespace lockstep {

SimCustomAllReduce::SimCustomAllReduce(SimContext& ctx, std::string name, std::vector<int> peers)
    : ctx_(ctx),
      name_(std::move(name)),
      peers_(std::move(peers)),
      members_(peers_.size()),
      index_(peers_) {}

int SimCustomAllReduce::MemberOf(int rank) const { return index_.Find(rank); }

std::vector<SimCustomAllReduce::FlagRun>& SimCustomAllReduce::Flags(int32_t member, uint32_t phase,
                                                                    int32_t writer) {
  // Allocated on a member's first barrier: an instance whose predicates
  // never admit a call (a group wider than any generation serves) costs
  // nothing per pair of members.
  auto& by_writer = members_[static_cast<size_t>(member)].flags[phase];
  if (by_writer.empty()) by_writer.resize(peers_.size());
  return by_writer[static_cast<size_t>(writer)];
}

protocol::ProtocolStatus SimCustomAllReduce::RunAllReduce(int member, const DecisionRecord& d,
                                                          const SimTensor& in, SimTensor& out,
                                                          const GraphSlot* graph) {
  members_[static_cast<size_t>(member)].blocks = d.blocks;
  CustomMem mem(*this, member, in, out, d.blocks, graph);
  protocol::AllReduceArgs args;
  args.rank = member;
  args.world = static_cast<int32_t>(peers_.size());
  args.elems = in.elems;
  args.elem = ctx_.elem;
  args.release_flags = (d.kernel_flags & kReleaseFlags) != 0;
  out.elems = in.elems;
  protocol::ProtocolStatus status;
  switch (d.algorithm) {
    case Algorithm::kOneShotPush:
      status = protocol::OneShotPushAllReduce(mem, args);
      break;
    case Algorithm::kOneShotPull:
    case Algorithm::kTwoShotPull:
      status = protocol::PullCall(mem, args, d.algorithm == Algorithm::kTwoShotPull,
                                  16 / protocol::ElemBytes(ctx_.elem));
      break;
    case Algorithm::kTwoShotPush:
      status = protocol::TwoShotPushAllReduce(mem, args, 16 / protocol::ElemBytes(ctx_.elem));
      break;
    default:
      status = protocol::CustomAllReduce(mem, args);
      break;
  }
  // The kernel's end is a full fence: what it stored is visible everywhere.
  if (ctx_.relaxed != nullptr) ctx_.relaxed->Flush(peers_[static_cast<size_t>(member)]);
  return status;
}

SimCustomAllReduce::GraphSlot SimCustomAllReduce::CaptureGraphInput(int member,
                                                                    int64_t unrecorded) {
  Member& m = members_[static_cast<size_t>(member)];
  const GraphSlot slot{m.graph_captured++, static_cast<int32_t>(m.graph_recorded.size())};
  if (slot.input >= unrecorded) m.graph_recorded.push_back(slot.input);
  return slot;
}

void SimCustomAllReduce::RegisterGraphInputs(int member, std::vector<std::vector<int32_t>> rows) {
  members_[static_cast<size_t>(member)].graph_rows = std::move(rows);
}

void SimCustomAllReduce::LandFlags(int32_t target, uint32_t phase, int32_t writer, int32_t blocks,
                                   uint64_t epoch) {
  Member& m = members_[static_cast<size_t>(target)];
  StoreFlags(Flags(target, phase, writer), 0, blocks, epoch);
  if (m.waiting && m.wait_kind == WaitKind::kFlags && m.wait_phase == phase &&
      m.wait_peer == writer) {
    m.waiting = false;
    ctx_.scheduler.Wake(peers_[static_cast<size_t>(target)]);
  }
}

void SimCustomAllReduce::WakeIfWaiting(int32_t target, WaitKind kind, int32_t writer) {
  Member& m = members_[static_cast<size_t>(target)];
  if (!m.waiting || m.wait_kind != kind) return;
  if (kind == WaitKind::kSlot && m.wait_peer != writer) return;
  m.waiting = false;
  ctx_.scheduler.Wake(peers_[static_cast<size_t>(target)]);
}

LamportBuffer& SimCustomAllReduce::Slot(int32_t target, uint32_t half, int32_t writer) {
  auto& by_writer = members_[static_cast<size_t>(target)].slots[half & 1u];
  if (by_writer.empty()) by_writer.resize(peers_.size());
  return by_writer[static_cast<size_t>(writer)];
}

void SimCustomAllReduce::LandArrival(int32_t target, int32_t writer, int32_t blocks) {
  Member& m = members_[static_cast<size_t>(target)];
  m.arrivals.AddToFirst(blocks, 1);
  if (m.arrivals_from.empty()) m.arrivals_from.resize(peers_.size());
  ++m.arrivals_from[static_cast<size_t>(writer)];
  WakeIfWaiting(target, WaitKind::kArrivals, writer);
}

bool SimCustomAllReduce::ArrivalsHold(const Member& m, int32_t blocks, uint32_t phase) const {
  const auto world = static_cast<uint32_t>(peers_.size());
  // Every block of the grid tests its own word; the words only change where
  // some grid ended, so one block of each stretch stands for the stretch.
  return m.arrivals.ForEachSegmentStart(m.counters, blocks, [&](int32_t b) {
    // The block's own window: its counter before this call's reservation.
    const uint32_t window = m.counters.At(b) - protocol::kPullPhases * world;
    // Unsigned, as Barrier::arrive compares (communicator.cuh:168-188).
    return m.arrivals.At(b) - (window + phase * world) >= world;
  });
}

void SimCustomAllReduce::StoreFlags(std::vector<FlagRun>& runs, int32_t begin, int32_t end,
                                    uint64_t epoch) {
  std::vector<FlagRun> next;
  for (const FlagRun& r : runs) {
    if (r.end <= begin || r.begin >= end) {
      next.push_back(r);
      continue;
    }
    if (r.begin < begin) next.push_back({r.begin, begin, r.epoch});
    if (r.end > end) next.push_back({end, r.end, r.epoch});
  }
  next.push_back({begin, end, epoch});
  std::sort(next.begin(), next.end(),
            [](const FlagRun& a, const FlagRun& b) { return a.begin < b.begin; });
  runs = std::move(next);
}

bool SimCustomAllReduce::FlagsHold(const std::vector<FlagRun>& runs, int32_t blocks,
                                   uint64_t epoch) {
  // Every block in [0, blocks) must hold `epoch`; runs are sorted and disjoint.
  int32_t covered = 0;
  for (const FlagRun& r : runs) {
    if (r.begin >= blocks) break;
    if (r.begin > covered || r.epoch != epoch) return false;
    covered = r.end;
  }
  return covered >= blocks;
}

std::string SimCustomAllReduce::DescribeWait(int rank, int64_t detail) const {
  const Member& m = members_[static_cast<size_t>(detail)];
  if (m.wait_kind == WaitKind::kSlot) {
    return absl::StrFormat(
        "rank %d polls its 1shot_push slot of rank %d (half %d) in custom all-reduce %s (call "
        "%d): rank %d's data never landed there",
        rank, peers_[static_cast<size_t>(m.wait_peer)], m.wait_phase, name_, m.wait_epoch,
        peers_[static_cast<size_t>(m.wait_peer)]);
  }
  if (m.wait_kind == WaitKind::kArrivals) {
    std::string behind;
    for (int p : WaitsOn(rank, detail)) absl::StrAppend(&behind, behind.empty() ? "" : ", ", p);
    return absl::StrFormat(
        "rank %d waits at phase %d of the counting barrier of custom all-reduce %s (call %d, %d "
        "blocks) for %d arrivals; ranks that arrived fewer times than it: %s",
        rank, m.wait_phase, name_, m.wait_epoch, m.blocks, peers_.size(),
        behind.empty() ? "none (the counts are out of step)" : behind);
  }
  return absl::StrFormat(
      "rank %d waits at the %s barrier of custom all-reduce %s (call %d, %d blocks) for the "
      "flags of rank %d's blocks",
      rank, m.wait_phase == protocol::kBarrierStart ? "start" : "end", name_, m.wait_epoch,
      m.blocks, peers_[static_cast<size_t>(m.wait_peer)]);
}

bool SimCustomAllReduce::WaitsOnLostWrite(int rank, int64_t detail) const {
  const Member& m = members_[static_cast<size_t>(detail)];
  if (m.wait_kind == WaitKind::kSlot) {
    for (const LostFlag& f : lost_pushes_) {
      if (f.target == static_cast<int32_t>(detail) && f.writer == m.wait_peer &&
          f.phase == m.wait_phase) {
        return true;
      }
    }
    return false;
  }
  if (m.wait_kind == WaitKind::kArrivals) {
    for (int p : WaitsOn(rank, detail)) {
      const int32_t writer = MemberOf(p);
      for (const LostFlag& f : lost_) {
        if (f.target == static_cast<int32_t>(detail) && f.writer == writer) return true;
      }
    }
    return false;
  }
  for (const LostFlag& f : lost_) {
    if (f.target == static_cast<int32_t>(detail) && f.writer == m.wait_peer &&
        f.phase == m.wait_phase && f.epoch == m.wait_epoch) {
      return true;
    }
  }
  return false;
}

std::vector<int> SimCustomAllReduce::WaitsOn(int, int64_t detail) const {
  const Member& m = members_[static_cast<size_t>(detail)];
  if (m.wait_kind == WaitKind::kArrivals) {
    // The count names no writer; the writers that arrived here fewer times
    // than the member itself are the ones it waits for.
    std::vector<int> behind;
    const uint64_t mine =
        m.arrivals_from.empty() ? 0 : m.arrivals_from[static_cast<size_t>(detail)];
    for (size_t p = 0; p < peers_.size(); ++p) {
      const uint64_t theirs = p < m.arrivals_from.size() ? m.arrivals_from[p] : 0;
      if (theirs < mine) behind.push_back(peers_[p]);
    }
    return behind;
  }
  if (m.wait_peer < 0) return {};
  return {peers_[static_cast<size_t>(m.wait_peer)]};
}

void CustomMem::Stage(int64_t pos, const Value& v) {
  SimCustomAllReduce::Member& m = ar_.members_[static_cast<size_t>(member_)];
  if (graph_ != nullptr) {
    // A registered graph input is the call's own input tensor, written by
    // the kernels before it: visible to every peer once it reaches the
    // barrier, whatever the memory model.
    const auto input = static_cast<size_t>(graph_->input);
    if (m.graph_inputs.size() <= input) m.graph_inputs.resize(input + 1);
    if (pos == 0) m.graph_inputs[input].Reset();
    WriteChunk(m.graph_inputs[input], pos, v, ctx_.Clock(rank_), rank_);
    return;
  }
  if (pos == 0) m.staged.Reset();
  const int64_t now = ctx_.Clock(rank_);
  WriteChunk(m.staged, pos, v, now, rank_);
  if (ctx_.relaxed == nullptr) return;
  // Relaxed memory: each peer sees the staged input once the store reaches
  // it, in pieces (16-byte vectors apart) that land separately; until then
  // it reads what its view held before (an earlier call's input).
  m.seen.resize(ar_.peers_.size());
  SimCustomAllReduce* ar = &ar_;
  const int32_t member = member_;
  const int writer = rank_;
  for (size_t q = 0; q < ar_.peers_.size(); ++q) {
    if (static_cast<int32_t>(q) == member_) continue;
    const std::vector<int64_t> cuts =
        ctx_.relaxed->Cuts(v.len, 16 / protocol::ElemBytes(ctx_.elem));
    for (size_t i = 0; i + 1 < cuts.size(); ++i) {
      const int64_t at = pos + cuts[i];
      SimChunk piece = SubChunk(v, cuts[i], cuts[i + 1]);
      ctx_.relaxed->Store(ctx_.scheduler.steps(), writer, ar_.peers_[q],
                          StoreTarget{ar, member, at, at + piece.len},
                          [ar, member, q, at, piece = std::move(piece), now, writer] {
                            WriteChunk(ar->members_[static_cast<size_t>(member)].seen[q], at, piece,
                                       now, writer);
                          });
    }
  }
}

bool CustomMem::LoadStaged(int32_t peer, int64_t pos, int64_t len, Value* out) {
  const int source = ar_.peers_[static_cast<size_t>(peer)];
  const int64_t bytes = len * protocol::ElemBytes(ctx_.elem);
  out->pieces.clear();
  int64_t ready = 0;
  const SimCustomAllReduce::Member& from = ar_.members_[static_cast<size_t>(peer)];
  if (graph_ != nullptr) {
    // Where this rank's registration points for that peer: one of its
    // captured inputs, or nothing of it (a row its registration never
    // filled reads no contribution of the peer).
    const SimCustomAllReduce::Member& me = ar_.members_[static_cast<size_t>(member_)];
    const auto row = static_cast<size_t>(graph_->row);
    const int32_t input =
        row < me.graph_rows.size() && static_cast<size_t>(peer) < me.graph_rows[row].size()
            ? me.graph_rows[row][static_cast<size_t>(peer)]
            : -1;
    static const RunList kNothing;
    const RunList& source_input =
        input >= 0 && static_cast<size_t>(input) < from.graph_inputs.size()
            ? from.graph_inputs[static_cast<size_t>(input)]
            : kNothing;
    source_input.Read(pos, pos + len, *out, &ready);
  } else if (ctx_.relaxed != nullptr && peer != member_) {
    // What of the peer's staged input has reached this rank.
    static const RunList kNothing;
    const RunList& view = from.seen.empty() ? kNothing : from.seen[static_cast<size_t>(member_)];
    view.Read(pos, pos + len, *out, &ready);
    CoalescePieces(*out);
    if (const RelaxedVisibility::InFlight* late =
            ctx_.relaxed->Pending(source, rank_, StoreTarget{&ar_, peer, pos, pos + len})) {
      ctx_.relaxed->NoteLateRead(absl::StrFormat(
          "rank %d read elements [%d,%d) of rank %d's staged input (custom all-reduce %s, call "
          "%d) before rank %d's store of elements [%d,%d), made at scheduling step %d, reached "
          "it (it lands by step %d; the read was at step %d)",
          rank_, pos, pos + len, source, ar_.name_,
          ar_.members_[static_cast<size_t>(member_)].epoch, source, late->target.begin,
          late->target.end, late->made, late->due, ctx_.scheduler.steps()));
    }
  } else {
    from.staged.Read(pos, pos + len, *out, &ready);
  }
  if (ctx_.relaxed != nullptr && peer == member_) {
    // v2 2shot_pull's copy out: the peers' shard stores into this rank's
    // workspace must have landed.
    for (size_t q = 0; q < ar_.peers_.size(); ++q) {
      const int writer = ar_.peers_[q];
      if (writer == rank_) continue;
      if (const RelaxedVisibility::InFlight* late =
              ctx_.relaxed->Pending(writer, rank_, StoreTarget{&ar_, peer, pos, pos + len})) {
        ctx_.relaxed->NoteLateRead(absl::StrFormat(
            "rank %d copied elements [%d,%d) of its workspace out (custom all-reduce %s, call %d) "
            "before rank %d's store of its reduced shard [%d,%d), made at scheduling step %d, "
            "reached it (it lands by step %d; the read was at step %d)",
            rank_, pos, pos + len, ar_.name_, ar_.members_[static_cast<size_t>(member_)].epoch,
            writer, late->target.begin, late->target.end, late->made, late->due,
            ctx_.scheduler.steps()));
        break;
      }
    }
  }
  ctx_.AdvanceTo(rank_, ready + ctx_.hardware.TransferNs(source, rank_, bytes));
  return true;
}

void CustomMem::Release() {
  if (ctx_.relaxed != nullptr) ctx_.relaxed->Release(rank_);
}

void CustomMem::Signal(int32_t peer, uint32_t phase, uint64_t epoch) {
  const int target = ar_.peers_[static_cast<size_t>(peer)];
  if (ctx_.faults != nullptr && target != rank_ && ctx_.faults->DropsFlag(rank_, target, epoch)) {
    ar_.lost_.push_back({member_, peer, phase, epoch});
    return;
  }
  if (ctx_.relaxed != nullptr && target != rank_) {
    // The flag is a store like any other: it lands late too, and before the
    // data staged ahead of it unless a Release came between them.
    SimCustomAllReduce* ar = &ar_;
    const int32_t member = member_;
    const int32_t blocks = blocks_;
    ctx_.relaxed->Store(ctx_.scheduler.steps(), rank_, target,
                        StoreTarget{ar, -1 - static_cast<int64_t>(phase), member_, member_ + 1},
                        [ar, peer, phase, member, blocks, epoch] {
                          ar->LandFlags(peer, phase, member, blocks, epoch);
                        });
    return;
  }
  ar_.LandFlags(peer, phase, member_, blocks_, epoch);
}

bool CustomMem::WaitFlags(int32_t peer, uint32_t phase, uint64_t epoch) {
  SimCustomAllReduce::Member& m = ar_.members_[static_cast<size_t>(member_)];
  const int source = ar_.peers_[static_cast<size_t>(peer)];
  while (!SimCustomAllReduce::FlagsHold(ar_.Flags(member_, phase, peer), blocks_, epoch)) {
    m.waiting = true;
    m.wait_kind = SimCustomAllReduce::WaitKind::kFlags;
    m.wait_phase = phase;
    m.wait_peer = peer;
    m.wait_epoch = epoch;
    if (!ctx_.scheduler.Block(BlockReason{&ar_, member_, ctx_.Clock(rank_)})) {
      m.waiting = false;
      return false;
    }
  }
  m.wait_peer = -1;
  ctx_.AdvanceTo(rank_, ctx_.Clock(rank_) + ctx_.hardware.TransferNs(source, rank_, 0));
  return true;
}

uint64_t CustomMem::NextEpoch() { return ++ar_.members_[static_cast<size_t>(member_)].epoch; }

// ---- v2 push plane ----

uint32_t CustomMem::PushHalf() {
  SimCustomAllReduce::Member& m = ar_.members_[static_cast<size_t>(member_)];
  ++m.epoch;  // the call's number, for reports
  return m.push_counter & 1u;
}

void CustomMem::PushSlot(int32_t peer, uint32_t half, int64_t pos, const Value& v) {
  const int target = ar_.peers_[static_cast<size_t>(peer)];
  const uint64_t epoch = ar_.members_[static_cast<size_t>(member_)].epoch;
  int64_t ready = ctx_.Clock(rank_);
  if (target != rank_) {
    ready += ctx_.hardware.TransferNs(rank_, target, v.len * protocol::ElemBytes(ctx_.elem));
    if (ctx_.faults != nullptr && ctx_.faults->DropsPush(rank_, target, epoch)) {
      ar_.lost_pushes_.push_back({member_, peer, half, epoch});
      return;
    }
  }
  SimCustomAllReduce* ar = &ar_;
  const int32_t writer = member_;
  const int writer_rank = rank_;
  auto land = [ar, peer, half, writer, writer_rank, pos, v, ready] {
    ar->Slot(peer, half, writer).Write(pos, v, ready, writer_rank);
    ar->WakeIfWaiting(peer, SimCustomAllReduce::WaitKind::kSlot, writer);
  };
  if (target != rank_ && ctx_.relaxed != nullptr) {
    // Every 16-byte vector is its own flag (the +0 marker): the push may
    // land late and out of order with this rank's others, whole.
    ctx_.relaxed->Store(ctx_.scheduler.steps(), rank_, target,
                        StoreTarget{ar, -3 - static_cast<int64_t>(half), pos, pos + v.len},
                        std::move(land));
    return;
  }
  land();
}

bool CustomMem::PollSlot(int32_t writer, uint32_t half, int64_t pos, int64_t len, Value* out) {
  SimCustomAllReduce::Member& m = ar_.members_[static_cast<size_t>(member_)];
  while (true) {
    out->pieces.clear();
    int64_t ready = 0;
    if (ar_.Slot(member_, half, writer).Read(pos, pos + len, *out, &ready)) {
      m.wait_peer = -1;
      ctx_.AdvanceTo(rank_, ready);
      return true;
    }
    m.waiting = true;
    m.wait_kind = SimCustomAllReduce::WaitKind::kSlot;
    m.wait_phase = half;
    m.wait_peer = writer;
    m.wait_epoch = m.epoch;
    if (!ctx_.scheduler.Block(BlockReason{&ar_, member_, ctx_.Clock(rank_)})) {
      m.waiting = false;
      return false;
    }
  }
}

void CustomMem::ResetSlot(int32_t writer, uint32_t half, int64_t pos, int64_t len) {
  ar_.Slot(member_, half, writer).Clear(pos, pos + len);
}

void CustomMem::FlipHalf(uint32_t half) {
  ar_.members_[static_cast<size_t>(member_)].push_counter = half ^ 1u;
}

// ---- v2 pull plane ----

uint32_t CustomMem::ReserveWindow(uint32_t arrivals) {
  SimCustomAllReduce::Member& m = ar_.members_[static_cast<size_t>(member_)];
  ++m.epoch;
  const uint32_t window = m.counters.At(0);
  m.counters.AddToFirst(blocks_, arrivals);
  return window;
}

void CustomMem::StoreStaged(int32_t peer, int64_t pos, const Value& v) {
  const int target = ar_.peers_[static_cast<size_t>(peer)];
  const int64_t ready =
      ctx_.Clock(rank_) +
      ctx_.hardware.TransferNs(rank_, target, v.len * protocol::ElemBytes(ctx_.elem));
  int32_t input = -1;  // the peer's workspace
  if (graph_ != nullptr) {
    // Captured: the peer's registered input, where this rank's row points.
    const SimCustomAllReduce::Member& me = ar_.members_[static_cast<size_t>(member_)];
    const auto row = static_cast<size_t>(graph_->row);
    input = row < me.graph_rows.size() && static_cast<size_t>(peer) < me.graph_rows[row].size()
                ? me.graph_rows[row][static_cast<size_t>(peer)]
                : -1;
    if (input < 0) return;  // a pointer to nothing of the peer's
  }
  SimCustomAllReduce* ar = &ar_;
  const int writer = rank_;
  auto land = [ar, peer, input, pos, v, ready, writer] {
    SimCustomAllReduce::Member& to = ar->members_[static_cast<size_t>(peer)];
    if (input < 0) {
      WriteChunk(to.staged, pos, v, ready, writer);
      return;
    }
    if (to.graph_inputs.size() <= static_cast<size_t>(input)) {
      to.graph_inputs.resize(static_cast<size_t>(input) + 1);
    }
    WriteChunk(to.graph_inputs[static_cast<size_t>(input)], pos, v, ready, writer);
  };
  if (target != rank_ && ctx_.relaxed != nullptr) {
    // Lands late; only the second phase's release orders it before the
    // arrival its owner waits for.
    ctx_.relaxed->Store(ctx_.scheduler.steps(), writer, target,
                        StoreTarget{ar, peer, pos, pos + v.len}, std::move(land));
    return;
  }
  land();
}

void CustomMem::Arrive(int32_t peer, uint32_t phase) {
  const int target = ar_.peers_[static_cast<size_t>(peer)];
  const uint64_t epoch = ar_.members_[static_cast<size_t>(member_)].epoch;
  if (ctx_.faults != nullptr && target != rank_ && ctx_.faults->DropsFlag(rank_, target, epoch)) {
    ar_.lost_.push_back({member_, peer, phase, epoch});
    return;
  }
  if (ctx_.relaxed != nullptr && target != rank_) {
    SimCustomAllReduce* ar = &ar_;
    const int32_t member = member_;
    const int32_t blocks = blocks_;
    ctx_.relaxed->Store(ctx_.scheduler.steps(), rank_, target,
                        StoreTarget{ar, -1 - static_cast<int64_t>(phase), member_, member_ + 1},
                        [ar, peer, member, blocks] { ar->LandArrival(peer, member, blocks); });
    return;
  }
  ar_.LandArrival(peer, member_, blocks_);
}

void CustomMem::EndKernel() {
  if (ctx_.relaxed != nullptr) ctx_.relaxed->Flush(rank_);
}

bool CustomMem::WaitArrivals(uint32_t phase, uint32_t /*target*/) {
  // Each block waits on its own semaphore against its own window
  // (ArrivalsHold); `target` is block 0's, as the protocol computed it.
  SimCustomAllReduce::Member& m = ar_.members_[static_cast<size_t>(member_)];
  while (!ar_.ArrivalsHold(m, blocks_, phase)) {
    m.waiting = true;
    m.wait_kind = SimCustomAllReduce::WaitKind::kArrivals;
    m.wait_phase = phase;
    m.wait_peer = -1;
    m.wait_epoch = m.epoch;
    if (!ctx_.scheduler.Block(BlockReason{&ar_, member_, ctx_.Clock(rank_)})) {
      m.waiting = false;
      return false;
    }
  }
  ctx_.AdvanceTo(rank_, ctx_.Clock(rank_) + ctx_.hardware.TransferNs(rank_, rank_, 0));
  return true;
}

}  // namespace lockstep
