#include "sim/memory/nccl_comm.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace lockstep {

std::string_view CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return "all_reduce";
    case CollectiveOp::kAllGather:
      return "all_gather";
    case CollectiveOp::kReduceScatter:
      return "reduce_scatter";
    case CollectiveOp::kAllGatherRows:
      return "all_gather_rows";
  }
  return "?";
}

namespace {

// From this many pieces up, an all-reduce's members share its result's list
// (RunList::SharedWith); below, each gets its own, which costs less than
// sharing for the usual sum of one piece.
constexpr size_t kSharedResultPieces = 8;

}  // namespace

SimComm::SimComm(SimContext& ctx, std::string name, std::vector<int> ranks)
    : ctx_(ctx),
      name_(std::move(name)),
      ranks_(std::move(ranks)),
      worst_hop_(ctx_.hardware.WorstHop(ranks_)),
      ring_(1),
      next_seq_(ranks_.size(), 0),
      gathered_for_(ranks_.size()),
      expired_at_(ranks_.size(), -1),
      index_(ranks_) {
  ring_[0].calls.resize(ranks_.size());
}

int64_t SimComm::WatchdogNs() const {
  return static_cast<int64_t>(ctx_.scenario.timeouts.watchdog_ms * 1e6);
}

std::optional<int64_t> SimComm::TakeExpiry(int member) {
  int64_t& at = expired_at_[static_cast<size_t>(member)];
  if (at < 0) return std::nullopt;
  return std::exchange(at, -1);
}

int SimComm::MemberOf(int rank) const { return index_.Find(rank); }

void SimComm::GrowRing(uint64_t seq) {
  // One new ring of the size `seq` needs (a power of two: a slot is found by
  // a mask; at least the present size); each outstanding sequence keeps its
  // slot's contents at its new place, and every slot gets what its calls
  // need.
  size_t size = ring_.size();
  while (seq - completed_ >= size) size *= 2;
  std::vector<Slot> grown(size);
  for (uint64_t k = completed_; k < completed_ + ring_.size(); ++k) {
    grown[k & (size - 1)] = std::move(ring_[k & (ring_.size() - 1)]);
  }
  for (Slot& slot : grown) {
    if (slot.calls.empty()) slot.calls.resize(ranks_.size());
  }
  ring_ = std::move(grown);
}

int64_t SimComm::ArrivalOf(const Call& call, size_t member) const {
  // A run-ahead member's clock ran on from where it posted; what earlier
  // calls kept it waiting is its stream's lag.
  if (!call.ahead) return call.arrival_ns;
  return call.arrival_ns + ctx_.streams[static_cast<size_t>(ranks_[member])].lag_ns;
}

void SimComm::Arrive(int member, Call&& call) {
  // A rank resumed only to shut down must not post: its buffers are about to go.
  if (ctx_.scheduler.shutting_down()) return;
  const auto m = static_cast<size_t>(member);
  uint64_t seq = 0;
  Call& placed = Place(member, &seq);
  placed.contract = call.contract;
  placed.in = call.in;
  placed.out = call.out;
  placed.value = call.value;
  placed.counts = call.counts;
  CompleteReady();
  while (completed_ <= seq) {
    if (!ctx_.scheduler.Block(BlockReason{this, member, ctx_.Clock(ranks_[m])})) {
      // Shutting down: withdraw the post, whose tensors live in this frame
      // (unless the call completed as the run stopped).
      if (completed_ > seq) return;
      Slot& slot = SlotOf(seq);
      slot.calls[m].posted = false;
      --slot.posted;
      return;
    }
  }
}

void SimComm::Post(int member, DType dtype, SimTensor& in) {
  assert(!ctx_.streams.empty() && !ctx_.scheduler.shutting_down());
  const auto m = static_cast<size_t>(member);
  if (results_.empty()) {
    // The communicator's first post: the ring takes at once every sequence
    // a member's posted calls may reach (each is fewer than kMaxPending past
    // the oldest incomplete one), rather than doubling up to it.
    results_.resize(ranks_.size());
    const uint64_t reach = std::max<uint64_t>(ring_.size(), SimContext::Stream::kMaxPending);
    GrowRing(completed_ + reach - 1);
  }
  uint64_t seq = 0;
  Call& call = Place(member, &seq);
  call.ahead = true;
  Slot& slot = ring_[seq & (ring_.size() - 1)];
  just_posted_seq_ = seq;
  just_posted_member_ = m;
  call.contract = {CollectiveOp::kAllReduce, in.elems, dtype, -1, 0};
  call.out = &results_[m];
  call.value = 0;
  call.counts = nullptr;
  // A symbolic input that is one run over the whole tensor is kept as its
  // fields (the completion's fast path reads nothing else); any other, and
  // every input of numeric data, as the tensor.
  const RunList::Runs& runs = in.runs.runs();
  call.whole = !ctx_.numeric_mode && in.elems > 0 && in.origin == 0 && runs.size() == 1 &&
               runs[0].begin == 0 && runs[0].end == in.elems && runs[0].value.numeric == nullptr &&
               runs[0].value.numeric_base == 0;
  if (call.whole) {
    const Run& r = runs[0];
    call.whole_in = WholeInput{r.value.key_sum, r.value.bits,  r.src,    r.ready_ns,
                               r.value.count,   r.value.exact, r.writer, r.value.flags};
    call.in = nullptr;
  } else {
    Posted& p = HeldOf(slot, m);
    p.in = TakeTensor(in);
    call.in = &p.in;
  }
  SimContext::Stream& stream = ctx_.streams[static_cast<size_t>(ranks_[m])];
  stream.comm = this;
  ++stream.pending;
  ++ctx_.posted_calls;
}

void SimComm::FinishPost(const TraceEvent& event, ReductionChecker* checker,
                         const ReductionCheck& check,
                         std::shared_ptr<const std::vector<int>> expected_owner) {
  assert(just_posted_seq_ != kNotPosted && just_posted_seq_ >= completed_);
  Slot& slot = ring_[just_posted_seq_ & (ring_.size() - 1)];
  const size_t m = just_posted_member_;
  just_posted_seq_ = kNotPosted;
  Call& call = slot.calls[m];
  // What CheckOf rebuilds the check from.
  assert(check.rank == event.rank && check.site == event.site &&
         check.elems == call.contract.count && check.origin == 0);
  const auto store = [&](PostedCall& to, bool with_event, bool with_check) {
    if (with_event) to.event = event;
    if (with_check) {
      to.checker = checker;
      to.instance = check.instance;
      to.group_key = check.group_key;
      to.expected = check.expected;
      to.expected_owner = expected_owner;
    }
  };
  if (slot.lead < 0) {
    slot.lead = static_cast<int>(m);
    store(slot.lead_call, true, true);
    call.own_event = event.rank != ranks_[m];
    call.own_check = false;
  } else {
    // The lead's event and check are read here, not written again.
    const PostedCall& lead = slot.lead_call;
    call.own_event = event.rank != ranks_[m] || !event.SameCallAs(lead.event);
    // The same expected ranks by identity, kept alive by the lead's owner.
    call.own_check =
        lead.checker != checker || lead.instance != check.instance ||
        lead.group_key != check.group_key || lead.expected.data() != check.expected.data() ||
        lead.expected.size() != check.expected.size() || lead.expected_owner != expected_owner;
    if (call.own_check) slot.checks_differ = true;
  }
  if (call.own_event || call.own_check) {
    store(HeldOf(slot, m).own, call.own_event, call.own_check);
  }
  CompleteReady();
}

int64_t SimComm::OldestPendingSince(int member) const {
  const auto m = static_cast<size_t>(member);
  const Call& call = ring_[completed_ & (ring_.size() - 1)].calls[m];
  return ArrivalOf(call, m);
}

void SimComm::CompleteReady() {
  while (!ctx_.run_ahead_fallback) {
    Slot& slot = ring_[completed_ & (ring_.size() - 1)];
    if (slot.posted < static_cast<int>(ranks_.size())) return;
    if (!Complete(slot, completed_)) return;
    slot.posted = 0;
    if (slot.lead >= 0) {
      slot.lead_call.expected_owner.reset();
      slot.lead = -1;
      slot.checks_differ = false;
    }
    ++completed_;
  }
}

bool SimComm::Complete(Slot& slot, uint64_t seq) {
  std::vector<Call>& calls = slot.calls;
  // One pass over the members (a wide group's calls are cold lines): their
  // contracts must agree, as NCCL assumes without checking; the call starts
  // when the last arrives; and the first to arrive is the one whose
  // deadline passes first (ties: the lower member).
  const CollectiveContract& first = calls.front().contract;
  int64_t start = 0;
  int64_t earliest = 0;
  size_t earliest_member = 0;
  for (size_t m = 0; m < calls.size(); ++m) {
    if (m > 0 && !(calls[m].contract == first)) {
      ReportContractMismatch(calls, seq, m);
      return false;
    }
    const int64_t arrival = ArrivalOf(calls[m], m);
    start = std::max(start, arrival);
    if (m == 0 || arrival < earliest) {
      earliest = arrival;
      earliest_member = m;
    }
  }
  // The watchdog: a member that waited longer than its budget for the last
  // one gave up at its deadline, and the first deadline to pass ends the job.
  int expired = -1;
  int64_t deadline = 0;
  if (const int64_t d = earliest + WatchdogNs(); start > d) {
    expired = static_cast<int>(earliest_member);
    deadline = d;
  }
  if (expired >= 0 && calls[static_cast<size_t>(expired)].ahead) {
    // Its call failed where the rank had already run on: only the
    // interleaved model follows what the rank does after the error.
    ctx_.FallBackToInterleaved();
    return false;
  }
  const int64_t bytes = first.count * DTypeSize(first.dtype);
  const int64_t done = start + ctx_.hardware.RingAllReduceNs(ranks_.size(), worst_hop_, bytes);
  const int sole = SoleCheckOf(slot);

  if (first.op != CollectiveOp::kAllReduce ||
      !AllReduceWholeInputs(calls, first.count, done, sole)) {
    MaterializeInputs(slot);
    WriteResults(calls, done);
  }
  FinishRunAhead(slot, done, sole);
  for (size_t m = 0; m < calls.size(); ++m) {
    Call& c = calls[m];
    c.posted = false;
    if (c.ahead) {
      // The rank went on without waiting: what the call kept it waiting is
      // added to its stream's lag (its arrival was its post plus that lag,
      // so the lag becomes the time from its post to `done`), and a rank
      // draining its stream wakes when this was its last call.
      SimContext::Stream& stream = ctx_.streams[static_cast<size_t>(ranks_[m])];
      stream.lag_ns = done - c.arrival_ns;
      if (c.own_check) slot.held[m].own.expected_owner.reset();
      if (--stream.pending == 0 && stream.draining) ctx_.scheduler.Wake(ranks_[m]);
      continue;
    }
    if (static_cast<int>(m) == expired) {
      ctx_.AdvanceTo(ranks_[m], deadline);
      expired_at_[m] = deadline;
    } else {
      ctx_.AdvanceTo(ranks_[m], done);
    }
    ctx_.scheduler.Wake(ranks_[m]);
  }
  return true;
}

void SimComm::ReportContractMismatch(const std::vector<Call>& calls, uint64_t seq, size_t m) {
  const CollectiveContract& first = calls.front().contract;
  nlohmann::json list = nlohmann::json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    const CollectiveContract& c = calls[k].contract;
    list.push_back({{"rank", ranks_[k]},
                    {"op", std::string(CollectiveOpName(c.op))},
                    {"count", c.count},
                    {"dtype", std::string(DTypeName(c.dtype))}});
  }
  ctx_.Report(Finding{
      Verdict::kMismatch,
      absl::StrFormat("NCCL %s call %d: rank %d posted %s of %d %s, rank %d posted %s of %d %s",
                      name_, seq, ranks_[0], CollectiveOpName(first.op), first.count,
                      DTypeName(first.dtype), ranks_[m], CollectiveOpName(calls[m].contract.op),
                      calls[m].contract.count, DTypeName(calls[m].contract.dtype)),
      {{"communicator", name_}, {"seq", seq}, {"calls", list}},
      ranks_[m],
      ArrivalOf(calls[m], m),
      Detector::kCollectiveContract});
}

void SimComm::WriteResults(std::vector<Call>& calls, int64_t done) {
  const CollectiveContract& first = calls.front().contract;
  if (first.op == CollectiveOp::kAllReduce) {
    Accumulator acc;
    // NCCL adds in the element type, in one fixed order for every member.
    SimChunk chunk;
    for (const Call& c : calls) {
      chunk.pieces.clear();
      c.in->runs.Read(0, first.count, chunk);
      AccumulatorAdd(ctx_, acc, chunk);
    }
    const SimChunk sum = AccumulatorFinish(ctx_, acc);
    if (sum.pieces.size() > kSharedResultPieces) {
      // A sum of many pieces (an all-reduce of gathered rows: a piece per
      // group) is one list every member shares, as an all-gather's result:
      // a copy per member would cost the group the square of its width.
      RunList result;
      WriteChunk(result, 0, sum, done, ranks_[0]);
      for (const Call& c : calls) {
        c.out->runs = RunList::SharedWith(result);
        c.out->elems = first.count;
      }
    } else {
      for (size_t m = 0; m < calls.size(); ++m) {
        calls[m].out->runs.Reset();
        calls[m].out->elems = first.count;
        WriteChunk(calls[m].out->runs, 0, sum, done, ranks_[m]);
      }
    }
  } else if (first.op == CollectiveOp::kReduceScatter) {
    // Member m's share, summed over every member in one fixed order.
    const std::vector<int64_t>& counts = *calls.front().counts;
    if (ReduceScatterWholeInputs(calls, counts, done)) {
      // (Done without a pass per member; see ReduceScatterWholeInputs.)
    } else {
      int64_t offset = 0;
      for (size_t m = 0; m < calls.size(); ++m) {
        const int64_t count = counts[m];
        Accumulator acc;
        SimChunk chunk;
        for (const Call& c : calls) {
          chunk.pieces.clear();
          c.in->runs.Read(offset, offset + count, chunk);
          chunk.len = count;
          AccumulatorAdd(ctx_, acc, chunk);
        }
        SimTensor& out = *calls[m].out;
        out.runs.Reset();
        out.elems = count;
        out.origin = calls[m].in->origin + offset;
        if (count > 0)
          WriteChunk(out.runs, 0, Rebased(AccumulatorFinish(ctx_, acc), offset), done, ranks_[m]);
        offset += count;
      }
    }
  } else if (first.op == CollectiveOp::kAllGatherRows) {
    const std::vector<int64_t>& counts = *calls.front().counts;
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<SimChunk> parts;
    for (size_t m = 0; m < calls.size(); ++m) {
      SimChunk chunk;
      calls[m].in->runs.Read(0, counts[m], chunk);
      chunk.len = counts[m];
      parts.push_back(std::move(chunk));
    }
    // The gathered rows, as every member receives them. Each member's copy
    // differs only in its runs' writer, which nothing reads once a
    // collective has landed (writers name the culprits of overlapping
    // pushes into peer buffers): every member shares the first member's
    // list, so a group's gather costs its width, not the width's square.
    RunList gathered;
    int64_t offset = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (counts[k] > 0) WriteChunk(gathered, offset, Rebased(parts[k], -offset), done, ranks_[0]);
      offset += counts[k];
    }
    for (size_t m = 0; m < calls.size(); ++m) {
      SimTensor& out = *calls[m].out;
      out.runs = RunList::SharedWith(gathered);
      out.elems = total;
      // The members' rows are consecutive in group order: the gathered rows
      // begin where the first member's do.
      out.origin = calls.front().in->origin;
    }
  } else {
    gathered_.clear();
    for (const Call& c : calls) gathered_.push_back(c.value);
    const auto shared = std::make_shared<const std::vector<int64_t>>(gathered_);
    for (auto& g : gathered_for_) g = shared;
  }
}

int SimComm::SoleCheckOf(const Slot& slot) const {
  // Every run-ahead member's check is the lead's (FinishPost compared each
  // with it; their element counts agree, as the contracts did, and their
  // origins are 0): the first such member's stands for all.
  if (slot.lead < 0 || slot.checks_differ || slot.lead_call.checker == nullptr) {
    return -1;
  }
  for (size_t m = 0; m < slot.calls.size(); ++m) {
    if (slot.calls[m].ahead) return static_cast<int>(m);
  }
  return -1;
}

void SimComm::MaterializeInputs(Slot& slot) {
  for (size_t m = 0; m < slot.calls.size(); ++m) {
    Call& call = slot.calls[m];
    if (!call.whole || call.in != nullptr) continue;
    // The tensor Post was given, remade from the fields it kept.
    const WholeInput& w = call.whole_in;
    SimValue value;
    value.key_sum = w.key_sum;
    value.count = w.count;
    value.exact = w.exact;
    value.bits = w.bits;
    value.flags = w.flags;
    SimTensor& in = HeldOf(slot, m).in;
    in.runs.Reset();
    in.elems = call.contract.count;
    in.origin = 0;
    in.runs.Write(Run{0, in.elems, value, w.src, w.ready_ns, w.writer});
    call.in = &in;
  }
}

ReductionCheck SimComm::CheckOf(const Slot& slot, size_t m, int64_t at_ns) const {
  const Call& call = slot.calls[m];
  const PostedCall& check = call.own_check ? slot.held[m].own : slot.lead_call;
  // The check's rank and site are its event's.
  int32_t rank = 0;
  const TraceEvent& event = EventOf(slot, m, &rank);
  return ReductionCheck{
      rank, event.site, check.instance, check.expected, check.group_key, call.contract.count,
      0,    at_ns};
}

void SimComm::FinishRunAhead(Slot& slot, int64_t done, int sole) {
  // Each run-ahead member's trace event, in member order, with the times
  // the interleaved model gives it: from its arrival to the completion.
  // A member runs ahead only after the slot has a lead (the first to post
  // it). The lead's event is hashed apart from rank and times once for
  // every member that shares it.
  if (slot.lead < 0) return;
  const std::vector<Call>& calls = slot.calls;
  uint32_t ahead = 0;
  const Trace::Prepared lead = Trace::Prepare(slot.lead_call.event);
  for (size_t m = 0; m < calls.size(); ++m) {
    const Call& call = calls[m];
    if (!call.ahead) continue;
    int32_t rank = 0;
    const TraceEvent& event = EventOf(slot, m, &rank);
    if (call.own_event) {
      ctx_.trace.AddAs(event, rank, ArrivalOf(call, m), done);
    } else {
      ctx_.trace.AddPrepared(lead, rank, ArrivalOf(call, m), done);
    }
    ++ahead;
  }
  if (ahead == 0) return;
  if (sole >= 0) {
    // Every member's result holds the same runs (the sum), so one check
    // stands for all of theirs (ReductionChecker::CheckSame).
    const auto s = static_cast<size_t>(sole);
    slot.lead_call.checker->CheckSame(ctx_, CheckOf(slot, s, done), results_[s], ahead);
    return;
  }
  for (size_t m = 0; m < calls.size(); ++m) {
    if (!calls[m].ahead) continue;
    ReductionChecker* checker =
        calls[m].own_check ? slot.held[m].own.checker : slot.lead_call.checker;
    if (checker == nullptr || ctx_.stopped()) continue;
    checker->Check(ctx_, CheckOf(slot, m, done), results_[m]);
  }
}

void SimComm::AllReduce(int member, DType dtype, const SimTensor& in, SimTensor& out) {
  Call p;
  p.contract = {CollectiveOp::kAllReduce, in.elems, dtype, -1, 0};
  p.in = &in;
  p.out = &out;
  Arrive(member, std::move(p));
}

RowCounts::RowCounts(std::vector<int64_t> c) : counts(std::move(c)), digest(LaneDigest(counts)) {}

void SimComm::ReduceScatter(int member, DType dtype, const SimTensor& in, const RowCounts& counts,
                            SimTensor& out) {
  Call p;
  p.contract = {CollectiveOp::kReduceScatter, in.elems, dtype, -1, counts.digest};
  p.in = &in;
  p.out = &out;
  p.counts = &counts.counts;
  Arrive(member, std::move(p));
}

void SimComm::AllGatherRows(int member, DType dtype, const SimTensor& in, const RowCounts& counts,
                            SimTensor& out) {
  int64_t total = 0;
  for (int64_t c : counts.counts) total += c;
  Call p;
  p.contract = {CollectiveOp::kAllGatherRows, total, dtype, -1, counts.digest};
  p.in = &in;
  p.out = &out;
  p.counts = &counts.counts;
  Arrive(member, std::move(p));
}

std::shared_ptr<const std::vector<int64_t>> SimComm::AllGather(int member, int64_t value) {
  Call p;
  p.contract = {CollectiveOp::kAllGather, 1, DType::kFp32, -1, 0};
  p.value = value;
  Arrive(member, std::move(p));
  return gathered_for_[static_cast<size_t>(member)];
}

std::string SimComm::DescribeWait(int rank, int64_t detail) const {
  // Whether it waits in a call or drains the calls it posted, a member waits
  // for the oldest sequence not completed: calls complete in order.
  const Slot& slot = ring_[completed_ & (ring_.size() - 1)];
  std::vector<int> missing;
  for (size_t m = 0; m < slot.calls.size(); ++m) {
    if (!slot.calls[m].posted) missing.push_back(ranks_[m]);
  }
  const Call& c = slot.calls[static_cast<size_t>(detail)];
  return absl::StrFormat("rank %d waits in NCCL %s on %s call %d (%s of %d %s) for ranks %s", rank,
                         CollectiveOpName(c.contract.op), name_, completed_,
                         CollectiveOpName(c.contract.op), c.contract.count,
                         DTypeName(c.contract.dtype), absl::StrJoin(missing, ","));
}

std::vector<int> SimComm::WaitsOn(int, int64_t) const {
  const Slot& slot = ring_[completed_ & (ring_.size() - 1)];
  std::vector<int> missing;
  for (size_t m = 0; m < slot.calls.size(); ++m) {
    if (!slot.calls[m].posted) missing.push_back(ranks_[m]);
  }
  return missing;
}

SimMailbox::SimMailbox(SimContext& ctx, int world)
    : ctx_(ctx), world_(world), waiting_on_(static_cast<size_t>(world), -1) {}

void SimMailbox::Send(int from, int to, int64_t count) {
  const uint64_t key =
      static_cast<uint64_t>(from) * static_cast<uint64_t>(world_) + static_cast<uint64_t>(to);
  const int64_t ready = ctx_.Clock(from) + ctx_.hardware.TransferNs(from, to, count * 2);
  queues_[key].items.push_back({count, ready});
  if (waiting_on_[static_cast<size_t>(to)] == from) {
    waiting_on_[static_cast<size_t>(to)] = -1;
    ctx_.scheduler.Wake(to);
  }
}

SimMailbox::Message SimMailbox::Queue::Pop() {
  const Message m = items[head++];
  if (head == items.size()) {
    items.clear();
    head = 0;
  } else if (head >= 16 && head * 2 >= items.size()) {
    // A long queue (a full pipeline's steps waiting for a stage) drops what
    // it received once that is half of it: its memory stays within twice
    // what is in flight, each item moved once on average.
    items.erase(items.begin(), items.begin() + head);
    head = 0;
  }
  return m;
}

int64_t SimMailbox::Recv(int to, int from, std::optional<int64_t>* expired_at) {
  const int64_t deadline =
      ctx_.Clock(to) + static_cast<int64_t>(ctx_.scenario.timeouts.watchdog_ms * 1e6);
  const uint64_t key =
      static_cast<uint64_t>(from) * static_cast<uint64_t>(world_) + static_cast<uint64_t>(to);
  // Looked up afresh after every wait: other ranks' sends may rehash the map.
  while (queues_[key].empty()) {
    waiting_on_[static_cast<size_t>(to)] = from;
    if (!ctx_.scheduler.Block(BlockReason{this, from, ctx_.Clock(to)})) return -1;
  }
  const Message m = queues_[key].Pop();
  if (m.ready_ns > deadline) {
    ctx_.AdvanceTo(to, deadline);
    *expired_at = deadline;
  } else {
    ctx_.AdvanceTo(to, m.ready_ns);
  }
  return m.count;
}

std::string SimMailbox::DescribeWait(int rank, int64_t detail) const {
  // StrCat, not StrFormat: a hang report at thousands of ranks asks this of
  // every rank of the later pipeline stages.
  return absl::StrCat("rank ", rank, " waits in NCCL recv for the activations of rank ", detail,
                      " (previous pipeline stage)");
}

std::vector<int> SimMailbox::WaitsOn(int, int64_t detail) const {
  return {static_cast<int>(detail)};
}

bool SimComm::ReduceScatterWholeInputs(const std::vector<Call>& calls,
                                       const std::vector<int64_t>& counts, int64_t done) {
  // Every member's share is the same sum over the members' inputs, element
  // by element. When each input is one run over the whole buffer, one pass
  // over the members gives that sum, and each share is its slice: what the
  // pass per member computes (the same contributions, added in the same
  // order), for the group's width instead of its square. Numeric mode keeps
  // the pass per member: its element classes are scanned per share.
  if (ctx_.numeric_mode) return false;
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  for (const Call& p : calls) {
    const RunList::Runs& runs = p.in->runs.runs();
    if (runs.size() != 1 || runs[0].begin != 0 || runs[0].end < total || runs[0].src != 0 ||
        (runs[0].value.flags & kShifted) != 0) {
      return false;
    }
  }
  Accumulator acc;
  SimChunk chunk;
  for (const Call& p : calls) {
    chunk.pieces.clear();
    p.in->runs.Read(0, total, chunk);
    chunk.len = total;
    AccumulatorAdd(ctx_, acc, chunk);
  }
  const SimChunk sum = AccumulatorFinish(ctx_, acc);
  int64_t offset = 0;
  for (size_t m = 0; m < calls.size(); ++m) {
    const int64_t count = counts[m];
    SimTensor& out = *calls[m].out;
    out.runs.Reset();
    out.elems = count;
    out.origin = calls[m].in->origin + offset;
    if (count > 0) {
      SimChunk share = sum;
      share.pieces.front().src = offset;
      share.pieces.front().len = count;
      share.len = count;
      WriteChunk(out.runs, 0, Rebased(std::move(share), offset), done, ranks_[m]);
    }
    offset += count;
  }
  return true;
}

bool SimComm::AllReduceWholeInputs(const std::vector<Call>& calls, int64_t count, int64_t done,
                                   int sole) {
  // What the general path computes for such inputs: each member's input read
  // as one piece and added to a sum of one segment, which becomes one run of
  // every member's result. Numeric mode keeps the general path (it adds
  // elements too).
  // (A WholeInput is such an input: Post.)
  if (ctx_.numeric_mode || count <= 0) return false;
  for (const Call& p : calls) {
    if (p.whole) continue;
    const RunList::Runs& runs = p.in->runs.runs();
    if (runs.size() != 1 || runs[0].begin > 0 || runs[0].end < count) return false;
  }
  // Where each input's element 0 sits in its value's index space (a piece's
  // `src`); an input elsewhere than the first's holds other offsets' data.
  const auto src_of = [](const Call& p) {
    if (p.whole) return p.whole_in.src;  // its run begins at 0
    const Run& r = p.in->runs.runs()[0];
    return r.src - r.begin;
  };
  const int64_t src = src_of(calls.front());
  SimValue sum;
  for (const Call& p : calls) {
    if (p.whole) {
      const WholeInput& v = p.whole_in;
      AddToSum(ctx_, sum, v, /*fp32=*/false, (v.flags & kShifted) != 0 || v.src != src);
      continue;
    }
    const SimValue& v = p.in->runs.runs()[0].value;
    AddToSum(ctx_, sum, v, /*fp32=*/false, (v.flags & kShifted) != 0 || src_of(p) != src);
  }
  sum.flags &= kShifted;
  for (size_t m = 0; m < calls.size(); ++m) {
    // A run-ahead member's result is read by its check only: where one
    // check stands for the group, only the sole checked result is written.
    if (sole >= 0 && calls[m].ahead && static_cast<int>(m) != sole) continue;
    SimTensor& out = *calls[m].out;
    out.runs.Reset();
    out.elems = count;
    out.runs.Write(Run{0, count, sum, src, done, ranks_[m]});
  }
  return true;
}

}  // namespace lockstep
