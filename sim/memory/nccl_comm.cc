#include "sim/memory/nccl_comm.h"

#include <algorithm>
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
      posts_(ranks_.size()),
      next_seq_(ranks_.size(), 0),
      gathered_for_(ranks_.size()),
      expired_at_(ranks_.size(), -1),
      index_(ranks_) {}

int64_t SimComm::WatchdogNs() const {
  return static_cast<int64_t>(ctx_.scenario.timeouts.watchdog_ms * 1e6);
}

std::optional<int64_t> SimComm::TakeExpiry(int member) {
  int64_t& at = expired_at_[static_cast<size_t>(member)];
  if (at < 0) return std::nullopt;
  return std::exchange(at, -1);
}

int SimComm::MemberOf(int rank) const { return index_.Find(rank); }

void SimComm::Arrive(int member, const Post& post) {
  // A rank resumed only to shut down must not post: its buffers are about to go.
  if (ctx_.scheduler.shutting_down()) return;
  const auto m = static_cast<size_t>(member);
  const uint64_t seq = next_seq_[m]++;
  pending_seq_ = seq;
  posts_[m] = post;
  posts_[m].posted = true;
  posts_[m].arrival_ns = ctx_.Clock(ranks_[m]);
  if (++posted_ == static_cast<int>(ranks_.size())) {
    Complete();
    return;
  }
  if (!ctx_.scheduler.Block(BlockReason{this, member, ctx_.Clock(ranks_[m])})) {
    // Shutting down: withdraw the post, whose tensors live in this frame.
    posts_[m].posted = false;
    --posted_;
  }
}

void SimComm::Complete() {
  // Contracts must agree, as NCCL assumes without checking.
  const CollectiveContract& first = posts_.front().contract;
  for (size_t m = 1; m < posts_.size(); ++m) {
    if (posts_[m].contract == first) continue;
    nlohmann::json calls = nlohmann::json::array();
    for (size_t k = 0; k < posts_.size(); ++k) {
      const CollectiveContract& c = posts_[k].contract;
      calls.push_back({{"rank", ranks_[k]},
                       {"op", std::string(CollectiveOpName(c.op))},
                       {"count", c.count},
                       {"dtype", std::string(DTypeName(c.dtype))}});
    }
    ctx_.Report(Finding{
        Verdict::kMismatch,
        absl::StrFormat("NCCL %s call %d: rank %d posted %s of %d %s, rank %d posted %s of %d %s",
                        name_, pending_seq_, ranks_[0], CollectiveOpName(first.op), first.count,
                        DTypeName(first.dtype), ranks_[m], CollectiveOpName(posts_[m].contract.op),
                        posts_[m].contract.count, DTypeName(posts_[m].contract.dtype)),
        {{"communicator", name_}, {"seq", pending_seq_}, {"calls", calls}},
        ranks_[m],
        posts_[m].arrival_ns,
        Detector::kCollectiveContract});
    return;
  }
  int64_t start = 0;
  for (const Post& p : posts_) start = std::max(start, p.arrival_ns);
  // The watchdog: a member that waited longer than its budget for the last
  // one gave up at its deadline. The first deadline to pass is the one that
  // ends the job (ties: the lower member).
  int expired = -1;
  int64_t deadline = 0;
  const int64_t budget = WatchdogNs();
  for (size_t m = 0; m < posts_.size(); ++m) {
    const int64_t d = posts_[m].arrival_ns + budget;
    if (start > d && (expired < 0 || d < deadline)) {
      expired = static_cast<int>(m);
      deadline = d;
    }
  }
  const int64_t bytes = first.count * DTypeSize(first.dtype);
  const int64_t done = start + ctx_.hardware.RingAllReduceNs(ranks_.size(), worst_hop_, bytes);

  if (first.op == CollectiveOp::kAllReduce) {
    if (AllReduceWholeInputs(first.count, done)) {
      // (Summed without chunks; see AllReduceWholeInputs.)
    } else {
      Accumulator acc;
      // NCCL adds in the element type, in one fixed order for every member.
      SimChunk chunk;
      for (const Post& p : posts_) {
        chunk.pieces.clear();
        p.in->runs.Read(0, first.count, chunk);
        AccumulatorAdd(ctx_, acc, chunk);
      }
      const SimChunk sum = AccumulatorFinish(ctx_, acc);
      if (sum.pieces.size() > kSharedResultPieces) {
        // A sum of many pieces (an all-reduce of gathered rows: a piece per
        // group) is one list every member shares, as an all-gather's result:
        // a copy per member would cost the group the square of its width.
        RunList result;
        WriteChunk(result, 0, sum, done, ranks_[0]);
        for (const Post& p : posts_) {
          p.out->runs = RunList::SharedWith(result);
          p.out->elems = first.count;
        }
      } else {
        for (size_t m = 0; m < posts_.size(); ++m) {
          posts_[m].out->runs.Reset();
          posts_[m].out->elems = first.count;
          WriteChunk(posts_[m].out->runs, 0, sum, done, ranks_[m]);
        }
      }
    }
  } else if (first.op == CollectiveOp::kReduceScatter) {
    // Member m's share, summed over every member in one fixed order.
    const std::vector<int64_t>& counts = *posts_.front().counts;
    if (ReduceScatterWholeInputs(counts, done)) {
      // (Done without a pass per member; see ReduceScatterWholeInputs.)
    } else {
      int64_t offset = 0;
      for (size_t m = 0; m < posts_.size(); ++m) {
        const int64_t count = counts[m];
        Accumulator acc;
        SimChunk chunk;
        for (const Post& p : posts_) {
          chunk.pieces.clear();
          p.in->runs.Read(offset, offset + count, chunk);
          chunk.len = count;
          AccumulatorAdd(ctx_, acc, chunk);
        }
        SimTensor& out = *posts_[m].out;
        out.runs.Reset();
        out.elems = count;
        out.origin = posts_[m].in->origin + offset;
        if (count > 0)
          WriteChunk(out.runs, 0, Rebased(AccumulatorFinish(ctx_, acc), offset), done, ranks_[m]);
        offset += count;
      }
    }
  } else if (first.op == CollectiveOp::kAllGatherRows) {
    const std::vector<int64_t>& counts = *posts_.front().counts;
    int64_t total = 0;
    for (int64_t c : counts) total += c;
    std::vector<SimChunk> parts;
    for (size_t m = 0; m < posts_.size(); ++m) {
      SimChunk chunk;
      posts_[m].in->runs.Read(0, counts[m], chunk);
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
    for (size_t m = 0; m < posts_.size(); ++m) {
      SimTensor& out = *posts_[m].out;
      out.runs = RunList::SharedWith(gathered);
      out.elems = total;
      // The members' rows are consecutive in group order: the gathered rows
      // begin where the first member's do.
      out.origin = posts_.front().in->origin;
    }
  } else {
    gathered_.clear();
    for (const Post& p : posts_) gathered_.push_back(p.value);
    const auto shared = std::make_shared<const std::vector<int64_t>>(gathered_);
    for (auto& g : gathered_for_) g = shared;
  }
  for (size_t m = 0; m < posts_.size(); ++m) {
    if (static_cast<int>(m) == expired) {
      ctx_.AdvanceTo(ranks_[m], deadline);
      expired_at_[m] = deadline;
    } else {
      ctx_.AdvanceTo(ranks_[m], done);
    }
    posts_[m].posted = false;
    ctx_.scheduler.Wake(ranks_[m]);
  }
  posted_ = 0;
}

void SimComm::AllReduce(int member, DType dtype, const SimTensor& in, SimTensor& out) {
  Post p;
  p.contract = {CollectiveOp::kAllReduce, in.elems, dtype, -1, 0};
  p.in = &in;
  p.out = &out;
  Arrive(member, p);
}

RowCounts::RowCounts(std::vector<int64_t> c) : counts(std::move(c)), digest(LaneDigest(counts)) {}

void SimComm::ReduceScatter(int member, DType dtype, const SimTensor& in, const RowCounts& counts,
                            SimTensor& out) {
  Post p;
  p.contract = {CollectiveOp::kReduceScatter, in.elems, dtype, -1, counts.digest};
  p.in = &in;
  p.out = &out;
  p.counts = &counts.counts;
  Arrive(member, p);
}

void SimComm::AllGatherRows(int member, DType dtype, const SimTensor& in, const RowCounts& counts,
                            SimTensor& out) {
  int64_t total = 0;
  for (int64_t c : counts.counts) total += c;
  Post p;
  p.contract = {CollectiveOp::kAllGatherRows, total, dtype, -1, counts.digest};
  p.in = &in;
  p.out = &out;
  p.counts = &counts.counts;
  Arrive(member, p);
}

std::shared_ptr<const std::vector<int64_t>> SimComm::AllGather(int member, int64_t value) {
  Post p;
  p.contract = {CollectiveOp::kAllGather, 1, DType::kFp32, -1, 0};
  p.value = value;
  Arrive(member, p);
  return gathered_for_[static_cast<size_t>(member)];
}

std::string SimComm::DescribeWait(int rank, int64_t detail) const {
  std::vector<int> missing;
  for (size_t m = 0; m < posts_.size(); ++m) {
    if (!posts_[m].posted) missing.push_back(ranks_[m]);
  }
  const Post& p = posts_[static_cast<size_t>(detail)];
  return absl::StrFormat("rank %d waits in NCCL %s on %s call %d (%s of %d %s) for ranks %s", rank,
                         CollectiveOpName(p.contract.op), name_,
                         next_seq_[static_cast<size_t>(detail)] - 1,
                         CollectiveOpName(p.contract.op), p.contract.count,
                         DTypeName(p.contract.dtype), absl::StrJoin(missing, ","));
}

std::vector<int> SimComm::WaitsOn(int, int64_t) const {
  std::vector<int> missing;
  for (size_t m = 0; m < posts_.size(); ++m) {
    if (!posts_[m].posted) missing.push_back(ranks_[m]);
  }
  return missing;
}

SimMailbox::SimMailbox(SimContext& ctx, int world)
    : ctx_(ctx), world_(world), waiting_on_(static_cast<size_t>(world), -1) {}

void SimMailbox::Send(int from, int to, int64_t count) {
  const uint64_t key =
      static_cast<uint64_t>(from) * static_cast<uint64_t>(world_) + static_cast<uint64_t>(to);
  const int64_t ready = ctx_.Clock(from) + ctx_.hardware.TransferNs(from, to, count * 2);
  queues_[key].push_back({count, ready});
  if (waiting_on_[static_cast<size_t>(to)] == from) {
    waiting_on_[static_cast<size_t>(to)] = -1;
    ctx_.scheduler.Wake(to);
  }
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
  std::deque<Message>& queue = queues_[key];
  const Message m = queue.front();
  queue.pop_front();
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

bool SimComm::ReduceScatterWholeInputs(const std::vector<int64_t>& counts, int64_t done) {
  // Every member's share is the same sum over the members' inputs, element
  // by element. When each input is one run over the whole buffer, one pass
  // over the members gives that sum, and each share is its slice: what the
  // pass per member computes (the same contributions, added in the same
  // order), for the group's width instead of its square. Numeric mode keeps
  // the pass per member: its element classes are scanned per share.
  if (ctx_.numeric_mode) return false;
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  for (const Post& p : posts_) {
    const RunList::Runs& runs = p.in->runs.runs();
    if (runs.size() != 1 || runs[0].begin != 0 || runs[0].end < total || runs[0].src != 0 ||
        (runs[0].value.flags & kShifted) != 0) {
      return false;
    }
  }
  Accumulator acc;
  SimChunk chunk;
  for (const Post& p : posts_) {
    chunk.pieces.clear();
    p.in->runs.Read(0, total, chunk);
    chunk.len = total;
    AccumulatorAdd(ctx_, acc, chunk);
  }
  const SimChunk sum = AccumulatorFinish(ctx_, acc);
  int64_t offset = 0;
  for (size_t m = 0; m < posts_.size(); ++m) {
    const int64_t count = counts[m];
    SimTensor& out = *posts_[m].out;
    out.runs.Reset();
    out.elems = count;
    out.origin = posts_[m].in->origin + offset;
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

bool SimComm::AllReduceWholeInputs(int64_t count, int64_t done) {
  // What the general path computes for such inputs: each member's input read
  // as one piece and added to a sum of one segment, which becomes one run of
  // every member's result. Numeric mode keeps the general path (it adds
  // elements too).
  if (ctx_.numeric_mode || count <= 0) return false;
  for (const Post& p : posts_) {
    const RunList::Runs& runs = p.in->runs.runs();
    if (runs.size() != 1 || runs[0].begin > 0 || runs[0].end < count) return false;
  }
  // Where each input's element 0 sits in its value's index space (a piece's
  // `src`); an input elsewhere than the first's holds other offsets' data.
  const auto src_of = [](const Post& p) {
    const Run& r = p.in->runs.runs()[0];
    return r.src - r.begin;
  };
  const int64_t src = src_of(posts_.front());
  SimValue sum;
  for (const Post& p : posts_) {
    const SimValue& v = p.in->runs.runs()[0].value;
    AddToSum(ctx_, sum, v, /*fp32=*/false, (v.flags & kShifted) != 0 || src_of(p) != src);
  }
  sum.flags &= kShifted;
  for (size_t m = 0; m < posts_.size(); ++m) {
    SimTensor& out = *posts_[m].out;
    out.runs.Reset();
    out.elems = count;
    out.runs.Write(Run{0, count, sum, src, done, ranks_[m]});
  }
  return true;
}

}  // namespace lockstep
