// What one simulated rank executes: the workload program (sim/workload_program.h)
// hosted on simulated memory, with every all-reduce going through the real
// dispatch core.

#include <algorithm>
#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "kernels/protocol/one_shot.h"
#include "kernels/protocol/two_shot.h"
#include "kernels/protocol/wait_report.h"
#include "sim/replica/dispatched_call.h"
#include "sim/replica/workload_program.h"
#include "sim/sim_run.h"

namespace lockstep {
namespace {

// The fused workspace a decision runs on (null: not the fused kernel).
SimWorkspace* FusedWorkspace(CommBackend* chosen, const DecisionRecord& record) {
  if (chosen == nullptr || record.backend != BackendKind::kFused) return nullptr;
  auto* fused = dynamic_cast<SimFusedBackend*>(chosen);
  return fused != nullptr ? fused->workspace() : nullptr;
}

// A policy without LamportStateOnDevice: the host keeps each workspace's
// Lamport buffer index and previous size in a counter and passes them to
// every fused launch as arguments. The counter advances at every launch the
// host makes, eager or captured; a replayed graph passes what its capture
// froze, and the counter stands still (ROCm/aiter #3928: a host counter
// frozen into a captured graph). Installed as every coordinator's call hook,
// so it sees the launch between the decision and the kernel.
class HostLamportCounters final : public CallHook {
 public:
  explicit HostLamportCounters(int rank) : rank_(rank) {}

  // The arguments a capture freezes into the graph for this launch.
  protocol::LamportState Capture(const SimWorkspace& ws, const DecisionRecord& record) {
    protocol::LamportState& counter = CounterOf(&ws);
    const protocol::LamportState frozen = counter;
    protocol::EndLamportCall(counter, Footprint(ws, record));
    return frozen;
  }
  // The next launch replays these (null: an eager launch).
  void set_replaying(const protocol::LamportState* frozen) { frozen_ = frozen; }

  absl::Status BeforeExecute(const DecisionRecord& record, CommBackend& chosen) override {
    SimWorkspace* ws = FusedWorkspace(&chosen, record);
    // Not a member: the backend itself raises.
    if (ws == nullptr || ws->MemberOf(rank_) < 0) return absl::OkStatus();
    protocol::LamportState& state = ws->State(ws->MemberOf(rank_));
    const protocol::LamportState& args = frozen_ != nullptr ? *frozen_ : CounterOf(ws);
    state.buffer = args.buffer;
    state.clear_elems = args.clear_elems;
    if (frozen_ == nullptr) protocol::EndLamportCall(CounterOf(ws), Footprint(*ws, record));
    return absl::OkStatus();
  }

 private:
  struct Counter {
    const SimWorkspace* workspace;
    protocol::LamportState state;
  };
  protocol::LamportState& CounterOf(const SimWorkspace* ws) {
    for (Counter& c : counters_) {
      if (c.workspace == ws) return c.state;
    }
    counters_.push_back(Counter{ws, {}});
    return counters_.back().state;
  }
  // What a launch of `record` leaves in its buffer: the next call's clear.
  static int64_t Footprint(const SimWorkspace& ws, const DecisionRecord& record) {
    const auto world = static_cast<int32_t>(ws.peers().size());
    const int64_t elems = record.call.tensor.numel();
    return record.algorithm == Algorithm::kTwoShot ? protocol::TwoShotFootprint(world, elems)
                                                   : protocol::OneShotFootprint(world, elems);
  }

  int rank_;
  const protocol::LamportState* frozen_ = nullptr;
  std::vector<Counter> counters_;
};

// The simulator as the workload's host: simulated tensors, fibers that yield
// at every communicator call, faults from the run's plan.
class SimHost {
 public:
  using Data = SimTensor;

  SimHost(SimRun& run, int rank)
      : run_(run),
        ctx_(run.ctx),
        rank_(rank),
        rt_(run.ranks[static_cast<size_t>(rank)]),
        counters_(rank) {
    if (!ctx_.streams.empty()) {
      // A kernel other than NCCL's waits for the rank's posted calls, and is
      // a scheduling point, as every call is in the interleaved model.
      rt_.drain_before_kernel = [this] {
        if (!in_checked_call_ || !Drain()) return;
        ctx_.scheduler.Yield();
        kernel_begin_ns_ = ctx_.Clock(rank_);
      };
    }
    if (!run_.policy.LamportStateOnDevice()) {
      for (RankWiring::Group& g : rt_.wiring.groups) {
        if (g.coordinator != nullptr) g.coordinator->set_call_hook(&counters_);
      }
    }
  }
  ~SimHost() {
    rt_.drain_before_kernel = nullptr;
    for (RankWiring::Group& g : rt_.wiring.groups) {
      if (g.coordinator != nullptr) g.coordinator->set_call_hook(nullptr);
    }
  }
  SimHost(const SimHost&) = delete;
  SimHost& operator=(const SimHost&) = delete;

  bool Stopped() const { return ctx_.stopped(); }
  void BeginStep(int step) {
    rt_.step = step;
    rt_.step_first_call = rt_.calls_made;
    if (ctx_.faults == nullptr) return;
    ctx_.faults->AtStepStart(rank_, step, rt_.wiring.local);
    for (int64_t delay_us : ctx_.faults->StragglerDelaysUs(rank_, step)) {
      ctx_.AdvanceTo(rank_, ctx_.Clock(rank_) + delay_us * 1000);
      // Late in the schedule too: let everyone else run first.
      for (int i = 0; i < 3; ++i) ctx_.scheduler.Yield();
    }
  }
  void EndStep() {
    // The host synchronises on the step's sampled tokens.
    if (!Drain()) return;
    ctx_.scheduler.Yield();
  }
  // Run-ahead (SimContext::Stream): blocks until every all-reduce the rank
  // posted has completed, as a host synchronising with its stream, and
  // takes on the rank's clock what they kept it waiting. False: the run
  // stopped first. Every call and exchange other than a posted all-reduce
  // drains first, so that it starts at the time the interleaved model
  // gives it.
  [[gnu::always_inline]] bool Drain() {
    if (ctx_.streams.empty()) return true;
    SimContext::Stream& stream = ctx_.streams[static_cast<size_t>(rank_)];
    // Every call but a posted all-reduce drains first: nothing to wait for
    // or to take is the common case, and costs a load and two compares.
    if (stream.pending == 0 && stream.lag_ns == 0) return true;
    return DrainStream(stream);
  }
  bool DrainStream(SimContext::Stream& stream) {
    while (stream.pending > 0) {
      if (ctx_.stopped()) return false;
      SimComm* comm = stream.comm;
      const int member = comm->MemberOf(rank_);
      stream.draining = true;
      const bool woken =
          ctx_.scheduler.Block(BlockReason{comm, member, comm->OldestPendingSince(member)});
      stream.draining = false;
      if (!woken) return false;
    }
    ctx_.Clock(rank_) += stream.lag_ns;
    stream.lag_ns = 0;
    stream.comm = nullptr;
    return true;
  }
  // Run-ahead: a reduction whose check travels with it. An eager all-reduce
  // the dispatch core sends to NCCL is posted (SimComm::Post) and the rank
  // goes on; its check runs when the group's call completes. Any other
  // backend runs after the rank's posted calls (RankRuntime::
  // drain_before_kernel), and is checked here.
  bool ReduceChecked(const SiteRef& at, GroupRole role, const TensorDesc& desc, SimTensor& data,
                     const CallContext& context, uint64_t instance, const ExpectedRanks& expected) {
    const ToCheck checked{instance, &expected};
    bool posted = false;
    if (!Reduce(at, role, desc, data, context, &checked, &posted)) return false;
    return posted || Check(at, instance, expected, data);
  }
  int64_t TokenSkew() const { return run_.token_skew[static_cast<size_t>(rank_)]; }
  const DispatchPolicy& Policy() const { return run_.policy; }
  const ReplicaConfig& Config() const { return run_.replica; }
  const RankLocalState& Local() const { return rt_.wiring.local; }

  std::optional<std::vector<int64_t>> AllGatherTokens(int64_t mine) {
    return AllGatherValue(mine, "DP-attention token all-gather");
  }
  std::optional<std::vector<int64_t>> AllGatherValue(int64_t mine, std::string_view what) {
    const int object = ctx_.layout.ObjectIndex(GroupRole::kTp);
    const auto* nccl = static_cast<const SimNcclBackend*>(
        rt_.wiring.groups[static_cast<size_t>(object)].nccl.get());
    if (nccl == nullptr) return std::nullopt;
    SimComm* comm = nccl->comm();
    if (!Drain()) return std::nullopt;
    ctx_.scheduler.Yield();
    const std::shared_ptr<const std::vector<int64_t>> values =
        comm->AllGather(comm->MemberOf(rank_), mine);
    if (ctx_.stopped()) return std::nullopt;
    if (const std::optional<int64_t> at = comm->TakeExpiry(comm->MemberOf(rank_))) {
      // The hardware runner exchanges these over MPI, under the watchdog's
      // deadline (hw/hw_rank.cc AllGatherValue).
      ctx_.Report(BoundedWaitFinding(
          rank_, nullptr, protocol::PeerMissedDeadline(std::string(what) + " over " + comm->name()),
          *at));
      return std::nullopt;
    }
    return values != nullptr ? *values : std::vector<int64_t>{};
  }
  void SetFusedTactic(FusedTactic tactic) { rt_.wiring.tactic = tactic; }
  int64_t ClockUs() const {
    // Read at a step's start, after EndStep drained the rank's stream.
    assert(ctx_.streams.empty() || ctx_.streams[static_cast<size_t>(rank_)].pending == 0);
    return ctx_.Clock(rank_) / 1000 + rt_.wiring.local.clock_skew_us;
  }

  bool RecvActivation(int from, int64_t elems) {
    if (!Drain()) return false;
    ctx_.scheduler.Yield();
    std::optional<int64_t> expired;
    const int64_t got = run_.mailbox.Recv(rank_, from, &expired);
    if (ctx_.stopped()) return false;
    if (expired) {
      ctx_.Report(BoundedWaitFinding(
          rank_, nullptr,
          protocol::PeerMissedDeadline(absl::StrFormat("activations from rank %d", from)),
          *expired));
      return false;
    }
    if (got != elems) {
      ctx_.Report(Finding{Verdict::kMismatch,
                          absl::StrFormat("rank %d received %d activation elements from rank "
                                          "%d, expected %d",
                                          rank_, got, from, elems),
                          {{"rank", rank_}},
                          rank_,
                          ctx_.Clock(rank_),
                          Detector::kActivationSize});
      return false;
    }
    return true;
  }
  void SendActivation(int to, int64_t elems) {
    if (!Drain()) return;
    run_.mailbox.Send(rank_, to, elems);
  }

  void Compute(int64_t tokens, int tp) {
    ctx_.AdvanceTo(rank_, ctx_.Clock(rank_) +
                              ctx_.hardware.LayerComputeNs(ctx_.scenario.model, tokens, tp) / 2);
  }

  // CUDA graphs (workload.cuda_graph_tokens): a capture decides each call
  // and keeps the decision; a replay runs the kept decisions in order.
  void BeginGraph(CallPhase phase, int64_t tokens) {
    // A graph's calls are not posted: the stream's earlier calls complete first.
    if (!Drain()) return;
    phase_ = phase;
    if (phase == CallPhase::kCapture) {
      if (ctx_.faults != nullptr) ctx_.faults->AtCapture(rank_, true, rt_.wiring.local);
      graphs_.push_back(CapturedGraph{tokens, {}});
      graph_ = &graphs_.back();
    } else {
      graph_ = nullptr;
      for (CapturedGraph& g : graphs_) {
        if (g.tokens == tokens) graph_ = &g;
      }
    }
    next_ = 0;
  }
  void EndGraph() {
    if (phase_ == CallPhase::kCapture && ctx_.faults != nullptr) {
      ctx_.faults->AtCapture(rank_, false, rt_.wiring.local);
    }
    phase_ = CallPhase::kEager;
    graph_ = nullptr;
  }

  // The set-up of every fusion workspace the rank is a member of, in the
  // order they were created: one exchange over the workspace's group stands
  // for its collectives (the allocation vote, flashinfer_comm_fusion.py:375,
  // and the handle exchange and barrier of create_allreduce_fusion_workspace,
  // 541-562 @ 0.5.23). What they agree is what the wiring's vote computed;
  // here they are calls the scheduler interleaves, so a rank that leaves the
  // set-up early leaves its peers waiting in it.
  bool SetUpWorkspaces() {
    for (const int32_t index : run_.workspaces_of[static_cast<size_t>(rank_)]) {
      const std::unique_ptr<SimWorkspace>& ws = run_.workspaces[static_cast<size_t>(index)];
      SimComm* comm = CommOf(ws->group());
      if (comm == nullptr) continue;
      const bool local_ok = rt_.wiring.local.workspace_allocated;
      if (!local_ok && !run_.policy.JoinSetUpAfterLocalFailure()) {
        NoteExchange(absl::StrFormat(
            "workspace set-up: rank %d's allocation failed and it left before the set-up "
            "exchange of fusion workspace %s, which its peers wait in",
            rank_, ws->name()));
        continue;
      }
      if (!Exchange(*comm, local_ok ? 1 : 0, [&] {
            return absl::StrFormat("the set-up of fusion workspace %s", ws->name());
          })) {
        return false;
      }
    }
    return !ctx_.stopped();
  }

  // After the captures, each custom all-reduce the rank is in registers the
  // inputs it captured (register_graph_buffers): an exchange of every
  // member's list over the group, in the order of the group objects.
  bool RegisterGraphInputs() {
    for (RankWiring::Group& g : rt_.wiring.groups) {
      auto* custom = dynamic_cast<SimCustomBackend*>(g.custom.get());
      const auto* nccl = static_cast<const SimNcclBackend*>(g.nccl.get());
      if (custom == nullptr || nccl == nullptr) continue;
      if (!RegisterGraphInputs(*custom->instance(), *nccl->comm())) return false;
    }
    return !ctx_.stopped();
  }

  SimTensor Input(const SiteRef& at, uint64_t instance, int64_t elems) {
    SiteRef here = at;
    here.phase = phase_;
    if (phase_ == CallPhase::kCapture) return CaptureTensor(elems);
    if (ctx_.faults == nullptr) return MakeInput(ctx_, rank_, instance, elems);
    const InjectedInput fault = ctx_.faults->InputFault(rank_, rt_.NextCall(here));
    InputInjection injected{fault.flags, 0, -1};
    if (fault.rows > 0) {
      // Rows of the call's [tokens, hidden] input.
      const int64_t hidden = ctx_.scenario.model.hidden;
      injected.first = fault.first_row * hidden;
      injected.elems = fault.rows * hidden;
    }
    return MakeInput(ctx_, rank_, instance, elems, injected);
  }

  SimTensor InputRows(uint64_t instance, int64_t rows, int64_t hidden, int64_t first, int64_t n) {
    if (phase_ == CallPhase::kCapture) return CaptureTensor(rows * hidden);
    return MakeInputRange(ctx_, rank_, instance, rows * hidden, first * hidden, n * hidden);
  }

  SimTensor Rows(const SimTensor& data, int64_t first, int64_t n, int64_t hidden) const {
    return SliceElements(data, first * hidden, n * hidden);
  }

  bool Collective(const SiteRef& site, RowCollective op, GroupRole role,
                  const std::vector<int64_t>& rows, int64_t hidden, SimTensor& data) {
    const int object = ctx_.layout.ObjectIndex(role);
    const auto* nccl = static_cast<const SimNcclBackend*>(
        rt_.wiring.groups[static_cast<size_t>(object)].nccl.get());
    if (phase_ == CallPhase::kCapture) {
      // Recorded into the graph, run at replay: the capture only needs the
      // result's shape.
      if (nccl == nullptr) return true;
      int64_t out = 0;
      const int member = nccl->comm()->MemberOf(rank_);
      for (size_t m = 0; m < rows.size(); ++m) {
        if (op == RowCollective::kAllGather || static_cast<int>(m) == member) out += rows[m];
      }
      data = CaptureTensor(out * hidden);
      return true;
    }
    if (!Drain()) return false;
    ctx_.scheduler.Yield();  // a communicator call is a scheduling point
    if (ctx_.stopped()) return false;
    if (nccl == nullptr) return !ctx_.stopped();  // a group of one rank: nothing to do
    SimComm* comm = nccl->comm();
    const std::shared_ptr<const RowCounts> counts = run_.RowCountsOf(rows, hidden);
    const SimTensor in = TakeTensor(data);
    // Not a dispatched all-reduce: it goes straight to NCCL and is not on
    // the trace (which records the dispatch core's calls).
    if (op == RowCollective::kReduceScatter) {
      comm->ReduceScatter(comm->MemberOf(rank_), ctx_.scenario.dispatch.dtype, in, *counts, data);
    } else {
      comm->AllGatherRows(comm->MemberOf(rank_), ctx_.scenario.dispatch.dtype, in, *counts, data);
    }
    if (ctx_.stopped()) return false;
    if (const std::optional<int64_t> at = comm->TakeExpiry(comm->MemberOf(rank_))) {
      ctx_.Report(BoundedWaitFinding(
          rank_, &site,
          protocol::WatchdogExpired(
              op == RowCollective::kReduceScatter ? "reduce-scatter" : "all-gather", comm->name(),
              std::nullopt, static_cast<uint64_t>(comm->WatchdogNs())),
          *at));
      return false;
    }
    return true;
  }

  std::shared_ptr<const std::vector<int64_t>> Shared(std::vector<int64_t> v) {
    return run_.Shared(std::move(v));
  }

  bool Check(const SiteRef& site, uint64_t instance, const ExpectedRanks& expected,
             const SimTensor& data) {
    if (phase_ == CallPhase::kCapture) return true;  // nothing ran
    SiteRef here = site;
    here.phase = phase_;
    return run_.checker.Check(ctx_,
                              ReductionCheck{rank_, here, instance, expected.ranks, expected.key,
                                             data.elems, data.origin},
                              data);
  }

  // What a reduction's result is checked against, for a call that may be
  // posted (ReduceChecked).
  struct ToCheck {
    uint64_t instance;
    const ExpectedRanks* expected;
  };
  // The backend `object`'s call is posted to in a run-ahead run, or null: no
  // NCCL backend, or no streams. A rank's posted calls are on one
  // communicator at a time (they then complete in its order), and at most
  // SimContext::Stream::kMaxPending of them: it drains first otherwise.
  SimNcclBackend* PostTarget(int object) {
    if (ctx_.streams.empty()) return nullptr;
    auto* nccl =
        static_cast<SimNcclBackend*>(rt_.wiring.groups[static_cast<size_t>(object)].nccl.get());
    if (nccl == nullptr) return nullptr;
    const SimContext::Stream& stream = ctx_.streams[static_cast<size_t>(rank_)];
    if ((stream.pending > 0 && stream.comm != nccl->comm()) ||
        stream.pending >= SimContext::Stream::kMaxPending) {
      if (!Drain()) return nullptr;
    }
    return nccl;
  }
  // The dispatched all-reduce of one site. With `checked` (ReduceChecked),
  // an eager call the dispatch core sends to NCCL may be posted: then
  // `*posted` is set and the check travels with it.
  bool Reduce(const SiteRef& at, GroupRole role, const TensorDesc& desc, SimTensor& data,
              const CallContext& context, const ToCheck* checked = nullptr,
              bool* posted = nullptr) {
    SiteRef site = at;
    site.phase = phase_;
    if (phase_ == CallPhase::kCapture) return Capture(site, role, desc, context);
    if (phase_ == CallPhase::kReplay) return Replay(site, data);
    const int object = ctx_.layout.ObjectIndex(role);
    SimNcclBackend* const post_to = checked != nullptr ? PostTarget(object) : nullptr;
    if (post_to == nullptr) {
      if (!Drain()) return false;
      ctx_.scheduler.Yield();  // a communicator call is a scheduling point
    }
    if (ctx_.stopped()) return false;
    if (ctx_.faults != nullptr && ctx_.faults->KillsRank(rank_, rt_.NextCall(site))) {
      // The process dies here: it never makes this call or any other.
      ctx_.scheduler.Kill(rank_);
      return false;
    }
    const int64_t elems = data.elems;
    Tensor tensor{desc, &data};
    rt_.BeginCall(object, site);
    if (post_to != nullptr) {
      kernel_begin_ns_ = -1;
      in_checked_call_ = true;
      post_to->set_post_next(true);
    }
    CallOutcome& outcome = outcome_;
    const bool dispatched =
        DispatchAllReduceInto(outcome, rt_.wiring.coordinator(object), tensor, context, rank_, site,
                              object, ctx_.layout, [this] { return ctx_.Clock(rank_); });
    bool was_posted = false;
    if (post_to != nullptr) {
      was_posted = post_to->posted();
      post_to->set_post_next(false);
      in_checked_call_ = false;
    }
    rt_.EndCall(dispatched && outcome.raised.has_value());
    if (was_posted) {
      assert(dispatched && !outcome.raised.has_value());
      const ExpectedRanks& expected = *checked->expected;
      post_to->comm()->FinishPost(
          outcome.event, &run_.checker,
          ReductionCheck{rank_, site, checked->instance, expected.ranks, expected.key, elems, 0},
          expected.owned);
      *posted = true;
      return !ctx_.stopped();
    }
    if (!dispatched) return !ctx_.stopped();
    if (post_to != nullptr && !AfterPostedCalls(outcome.event)) return false;
    ctx_.trace.Add(outcome.event);
    if (outcome.raised) {
      // The rank raises; the launcher tears the job down.
      ctx_.Report(*std::move(outcome.raised));
      return false;
    }
    return !ctx_.stopped();
  }
  // A call that could have been posted and was not: its event's times on
  // the rank's real timeline (after its posted calls). False: the run
  // stopped.
  bool AfterPostedCalls(TraceEvent& event) {
    if (kernel_begin_ns_ >= 0) {
      // It began where its kernel waited for the rank's posted calls.
      event.begin_ns = kernel_begin_ns_;
      return true;
    }
    // No kernel ran (the call raised before one): its times are the rank's
    // clock, which has not yet taken what its posted calls kept it waiting.
    const int64_t before = ctx_.Clock(rank_);
    if (!Drain()) return false;
    event.begin_ns += ctx_.Clock(rank_) - before;
    event.end_ns += ctx_.Clock(rank_) - before;
    return true;
  }

 private:
  // One call of a captured graph: its decision, frozen.
  struct GraphCall {
    int32_t object = 0;
    SiteRef site;
    TensorDesc desc;
    DecisionRecord record;
    CommBackend* chosen = nullptr;  // null: a group of one rank (nothing runs)
    // The Lamport launch arguments a host-side counter gave it at capture
    // (policies without LamportStateOnDevice).
    std::optional<protocol::LamportState> frozen;
    // The custom all-reduce's registered input and registration row.
    std::optional<SimCustomAllReduce::GraphSlot> custom;
  };
  struct CapturedGraph {
    int64_t tokens = 0;
    std::vector<GraphCall> calls;
  };
  // What a capture's calls carry: a shape and no data (nothing runs, nothing
  // is checked), so that a capture costs no numeric input.
  static SimTensor CaptureTensor(int64_t elems) {
    SimTensor t;
    t.elems = elems;
    return t;
  }
  void NoteExchange(std::string note) {
    if (run_.exchange_note.empty()) run_.exchange_note = std::move(note);
  }

  // The rank's communicator of group `group` (null: none, a group of one).
  SimComm* CommOf(GroupId group) {
    for (RankWiring::Group& g : rt_.wiring.groups) {
      if (g.id != group || g.nccl == nullptr) continue;
      return static_cast<const SimNcclBackend*>(g.nccl.get())->comm();
    }
    return nullptr;
  }

  // A host-level exchange of one value per member over `comm` (`what` names
  // it if a peer misses the deadline); every member's value, in the
  // communicator's order, into `values` when given.
  // `what` names the exchange in a missed deadline's report; it is made only
  // then (a workspace's name lists its group: formatted by every member of a
  // wide group and held while it waits, it cost the square of the width).
  bool Exchange(SimComm& comm, int64_t mine, absl::FunctionRef<std::string()> what,
                std::vector<int64_t>* values = nullptr) {
    if (!Drain()) return false;
    ctx_.scheduler.Yield();
    const std::shared_ptr<const std::vector<int64_t>> all =
        comm.AllGather(comm.MemberOf(rank_), mine);
    if (ctx_.stopped()) return false;
    if (const std::optional<int64_t> at = comm.TakeExpiry(comm.MemberOf(rank_))) {
      ctx_.Report(BoundedWaitFinding(
          rank_, nullptr,
          protocol::PeerMissedDeadline(absl::StrFormat("%s over %s", what(), comm.name())), *at));
      return false;
    }
    if (values != nullptr && all != nullptr) *values = *all;
    return true;
  }

  static SimCustomAllReduce* CustomInstance(CommBackend* chosen, const DecisionRecord& record) {
    if (chosen == nullptr || record.backend != BackendKind::kCustom) return nullptr;
    auto* custom = dynamic_cast<SimCustomBackend*>(chosen);
    return custom != nullptr ? custom->instance() : nullptr;
  }

  bool RegisterGraphInputs(SimCustomAllReduce& ar, SimComm& comm) {
    const int member = ar.MemberOf(rank_);
    const std::vector<int32_t>& mine = ar.RecordedGraphInputs(member);
    if (mine.empty() && !run_.policy.RegisterWithoutGraphInputs()) {
      NoteExchange(absl::StrFormat(
          "CUDA graphs: rank %d recorded no input of custom all-reduce %s and skipped its "
          "registration exchange, which its peers wait in",
          rank_, ar.name()));
      return true;
    }
    std::vector<int64_t> counts;
    if (!Exchange(
            comm, static_cast<int64_t>(mine.size()),
            [&] {
              return absl::StrFormat("the graph input registration of custom all-reduce %s",
                                     ar.name());
            },
            &counts)) {
      return false;
    }
    // Each member's count, in the custom all-reduce's member order.
    std::vector<int64_t> count_of;
    for (int peer : ar.peers()) {
      count_of.push_back(counts[static_cast<size_t>(comm.MemberOf(peer))]);
    }
    const bool equal = std::all_of(count_of.begin(), count_of.end(),
                                   [&](int64_t c) { return c == count_of.front(); });
    if (!equal && run_.policy.CheckGraphInputCounts()) {
      std::vector<std::string> each;
      for (size_t p = 0; p < count_of.size(); ++p) {
        each.push_back(absl::StrFormat("rank %d: %d", ar.peers()[p], count_of[p]));
      }
      Finding f;
      f.verdict = Verdict::kFailStop;
      f.detector = Detector::kBackendRaised;
      f.rank = rank_;
      f.at_ns = ctx_.Clock(rank_);
      f.summary = absl::StrFormat(
          "rank %d raised registering the CUDA graph inputs of custom all-reduce %s: its members "
          "captured different numbers of inputs (%s); registered by position they would pair "
          "other calls' buffers (the count check of vLLM PR #39791)",
          rank_, ar.name(), absl::StrJoin(each, ", "));
      f.details = {{"rank", rank_}, {"custom_allreduce", ar.name()}, {"captured_inputs", count_of}};
      ctx_.Report(std::move(f));
      return false;
    }
    if (!equal) {
      std::vector<std::string> each;
      for (size_t p = 0; p < count_of.size(); ++p) {
        if (count_of[p] != static_cast<int64_t>(mine.size())) {
          each.push_back(absl::StrFormat("rank %d: %d", ar.peers()[p], count_of[p]));
        }
      }
      NoteExchange(absl::StrFormat(
          "CUDA graphs: rank %d registered its %d inputs of custom all-reduce %s by position "
          "against different counts (%s): its replays read other calls' inputs of those ranks",
          rank_, mine.size(), ar.name(), absl::StrJoin(each, ", ")));
    }
    // Row r reads each peer's r-th recorded input; past a peer's list the
    // pointer leads to nothing of it (unchecked registration only).
    std::vector<std::vector<int32_t>> rows(mine.size());
    for (size_t r = 0; r < mine.size(); ++r) {
      for (size_t p = 0; p < count_of.size(); ++p) {
        const std::vector<int32_t>& theirs = ar.RecordedGraphInputs(static_cast<int>(p));
        rows[r].push_back(r < theirs.size() ? theirs[r] : -1);
      }
    }
    ar.RegisterGraphInputs(member, std::move(rows));
    return true;
  }

  // A capture: decides as the graph-tracing frontend does, records, runs
  // nothing (decode_cuda_graph_runner.py: the kernels only run at replay).
  // Capture and Replay stay out of line: inlined into Reduce they made its
  // frame 1 120 bytes, on every rank's stack under every eager call.
  ABSL_ATTRIBUTE_NOINLINE bool Capture(const SiteRef& site, GroupRole role, const TensorDesc& desc,
                                       const CallContext& context) {
    if (ctx_.stopped()) return false;
    const int object = ctx_.layout.ObjectIndex(role);
    GroupCoordinator& coordinator = rt_.wiring.coordinator(object);
    GraphCall call;
    call.object = object;
    call.site = site;
    call.desc = desc;
    CallDesc what;
    what.tensor = desc;
    what.context = context;
    what.context.graph_capture = true;
    call.chosen = coordinator.Decide(what, call.record);
    if (call.record.backend != BackendKind::kSkip) {
      TraceEvent event;
      event.rank = rank_;
      event.site = site;
      event.object = object;
      event.group = coordinator.group();
      event.tokens = desc.tokens();
      event.begin_ns = event.end_ns = ctx_.Clock(rank_);
      const absl::Status status =
          call.chosen != nullptr
              ? absl::OkStatus()
              : absl::FailedPreconditionError("group '" + coordinator.name() +
                                              "' has no NCCL backend to end its all-reduce chain");
      CallOutcome outcome = RecordDispatchedCall(event, call.record, status, ctx_.layout);
      ctx_.trace.Add(outcome.event);
      if (outcome.raised) {
        ctx_.Report(*std::move(outcome.raised));
        return false;
      }
    }
    if (SimWorkspace* ws = FusedWorkspace(call.chosen, call.record);
        ws != nullptr && !run_.policy.LamportStateOnDevice()) {
      call.frozen = counters_.Capture(*ws, call.record);
    }
    if (SimCustomAllReduce* ar = CustomInstance(call.chosen, call.record);
        ar != nullptr && (call.record.algorithm == Algorithm::kNone || call.record.graph_inputs)) {
      // Captured on its registered input (v1: registered=True while
      // capturing; v2: a pull algorithm, which takes a graph row).
      call.custom = ar->CaptureGraphInput(
          ar->MemberOf(rank_),
          ctx_.faults != nullptr ? ctx_.faults->UnrecordedGraphInputs(rank_) : int64_t{0});
    }
    graph_->calls.push_back(std::move(call));
    return true;
  }

  // A replay: the graph's next call, as captured, on this replay's data.
  ABSL_ATTRIBUTE_NOINLINE bool Replay(const SiteRef& site, SimTensor& data) {
    ctx_.scheduler.Yield();  // a communicator call is a scheduling point
    if (ctx_.stopped()) return false;
    if (graph_ == nullptr || next_ >= graph_->calls.size()) {
      // The program replays what it captured, call for call; anything else
      // is lockstep's own error.
      ctx_.Report(Finding{Verdict::kFailStop,
                          absl::StrFormat("rank %d at %s: no captured call to replay (internal "
                                          "error: the capture and the replay differ)",
                                          rank_, site.ToString()),
                          {{"rank", rank_}},
                          rank_,
                          ctx_.Clock(rank_),
                          Detector::kBackendRaised});
      return false;
    }
    GraphCall& call = graph_->calls[next_++];
    if (call.chosen == nullptr) return true;  // a group of one rank
    if (ctx_.faults != nullptr && ctx_.faults->KillsRank(rank_, rt_.NextCall(site))) {
      ctx_.scheduler.Kill(rank_);
      return false;
    }
    GroupCoordinator& coordinator = rt_.wiring.coordinator(call.object);
    Tensor tensor{call.desc, &data};
    DecisionRecord record = call.record;
    rt_.BeginCall(call.object, site);
    TraceEvent event;
    event.rank = rank_;
    event.site = site;
    event.object = call.object;
    event.group = coordinator.group();
    event.tokens = call.desc.tokens();
    event.begin_ns = ctx_.Clock(rank_);
    counters_.set_replaying(call.frozen ? &*call.frozen : nullptr);
    auto* custom = call.custom ? dynamic_cast<SimCustomBackend*>(call.chosen) : nullptr;
    if (custom != nullptr) custom->set_graph_slot(&*call.custom);
    const absl::Status status = coordinator.Replay(*call.chosen, tensor, record);
    if (custom != nullptr) custom->set_graph_slot(nullptr);
    counters_.set_replaying(nullptr);
    event.end_ns = ctx_.Clock(rank_);
    CallOutcome outcome = RecordDispatchedCall(event, record, status, ctx_.layout);
    rt_.EndCall(outcome.raised.has_value());
    ctx_.trace.Add(outcome.event);
    if (outcome.raised) {
      ctx_.Report(*std::move(outcome.raised));
      return false;
    }
    return !ctx_.stopped();
  }

  SimRun& run_;
  SimContext& ctx_;
  int rank_;
  RankRuntime& rt_;
  CallPhase phase_ = CallPhase::kEager;
  bool in_checked_call_ = false;  // in ReduceChecked's dispatch
  int64_t kernel_begin_ns_ = -1;  // where the last kernel's wait for posted calls ended
  // The dispatched call's outcome, written afresh by each (DispatchAllReduceInto).
  CallOutcome outcome_;
  std::vector<CapturedGraph> graphs_;
  CapturedGraph* graph_ = nullptr;  // the graph being captured or replayed
  size_t next_ = 0;                 // its next call to replay
  HostLamportCounters counters_;
};

}  // namespace

void RunRankProgram(SimRun& run, int rank) {
  SimHost host(run, rank);
  WorkloadProgram<SimHost> program(host, run.ctx.scenario, run.ctx.layout, rank);
  program.Run();
  host.Drain();  // the rank's last posted calls complete before it ends
}

}  // namespace lockstep
