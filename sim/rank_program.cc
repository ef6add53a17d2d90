// What one simulated rank executes: the workload program (sim/workload_program.h)
// hosted on simulated memory, with every all-reduce going through the real
// dispatch core.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_format.h"
#include "kernels/protocol/wait_report.h"
#include "sim/replica/dispatched_call.h"
#include "sim/replica/workload_program.h"
#include "sim/sim_run.h"

namespace lockstep {
namespace {

// The simulator as the workload's host: simulated tensors, fibers that yield
// at every communicator call, faults from the run's plan.
class SimHost {
 public:
  using Data = SimTensor;

  SimHost(SimRun& run, int rank)
      : run_(run), ctx_(run.ctx), rank_(rank), rt_(run.ranks[static_cast<size_t>(rank)]) {}

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
  void EndStep() { ctx_.scheduler.Yield(); }
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
    ctx_.scheduler.Yield();
    std::vector<int64_t> values = comm->AllGather(comm->MemberOf(rank_), mine);
    if (ctx_.stopped()) return std::nullopt;
    if (const std::optional<int64_t> at = comm->TakeExpiry(comm->MemberOf(rank_))) {
      // The hardware runner exchanges these over MPI, under the watchdog's
      // deadline (hw/hw_rank.cc AllGatherValue).
      ctx_.Report(BoundedWaitFinding(
          rank_, nullptr, protocol::PeerMissedDeadline(std::string(what) + " over " + comm->name()),
          *at));
      return std::nullopt;
    }
    return values;
  }
  void SetFusedTactic(FusedTactic tactic) { rt_.wiring.tactic = tactic; }
  int64_t ClockUs() const { return ctx_.Clock(rank_) / 1000 + rt_.wiring.local.clock_skew_us; }

  bool RecvActivation(int from, int64_t elems) {
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
  void SendActivation(int to, int64_t elems) { run_.mailbox.Send(rank_, to, elems); }

  void Compute(int64_t tokens, int tp) {
    ctx_.AdvanceTo(rank_, ctx_.Clock(rank_) +
                              ctx_.hardware.LayerComputeNs(ctx_.scenario.model, tokens, tp) / 2);
  }

  SimTensor Input(const SiteRef& at, uint64_t instance, int64_t elems) {
    const uint8_t flags =
        ctx_.faults != nullptr ? ctx_.faults->InputFlags(rank_, rt_.NextCall(at)) : uint8_t{0};
    return MakeInput(ctx_, rank_, instance, elems, flags);
  }

  SimTensor InputRows(uint64_t instance, int64_t rows, int64_t hidden, int64_t first, int64_t n) {
    return MakeInputRange(ctx_, rank_, instance, rows * hidden, first * hidden, n * hidden);
  }

  SimTensor Rows(const SimTensor& data, int64_t first, int64_t n, int64_t hidden) const {
    return SliceElements(data, first * hidden, n * hidden);
  }

  bool Collective(const SiteRef& site, RowCollective op, GroupRole role,
                  const std::vector<int64_t>& rows, int64_t hidden, SimTensor& data) {
    ctx_.scheduler.Yield();  // a communicator call is a scheduling point
    if (ctx_.stopped()) return false;
    const int object = ctx_.layout.ObjectIndex(role);
    const auto* nccl = static_cast<const SimNcclBackend*>(
        rt_.wiring.groups[static_cast<size_t>(object)].nccl.get());
    if (nccl == nullptr) return !ctx_.stopped();  // a group of one rank: nothing to do
    SimComm* comm = nccl->comm();
    std::vector<int64_t> counts;
    for (int64_t r : rows) counts.push_back(r * hidden);
    const SimTensor in = std::move(data);
    data = SimTensor{};
    // Not a dispatched all-reduce: it goes straight to NCCL and is not on
    // the trace (which records the dispatch core's calls).
    if (op == RowCollective::kReduceScatter) {
      comm->ReduceScatter(comm->MemberOf(rank_), ctx_.scenario.dispatch.dtype, in, counts, data);
    } else {
      comm->AllGatherRows(comm->MemberOf(rank_), ctx_.scenario.dispatch.dtype, in, counts, data);
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

  bool Check(const SiteRef& site, uint64_t instance, const ExpectedRanks& expected,
             const SimTensor& data) {
    return run_.checker.Check(ctx_,
                              ReductionCheck{rank_, site, instance, expected.ranks, expected.key,
                                             data.elems, data.origin},
                              data);
  }

  bool Reduce(const SiteRef& site, GroupRole role, const TensorDesc& desc, SimTensor& data,
              const CallContext& context) {
    ctx_.scheduler.Yield();  // a communicator call is a scheduling point
    if (ctx_.stopped()) return false;
    if (ctx_.faults != nullptr && ctx_.faults->KillsRank(rank_, rt_.NextCall(site))) {
      // The process dies here: it never makes this call or any other.
      ctx_.scheduler.Kill(rank_);
      return false;
    }
    const int object = ctx_.layout.ObjectIndex(role);
    Tensor tensor{desc, &data};
    rt_.BeginCall(object, site);
    std::optional<CallOutcome> outcome =
        DispatchAllReduce(rt_.wiring.coordinator(object), tensor, context, rank_, site, object,
                          ctx_.layout, [this] { return ctx_.Clock(rank_); });
    rt_.EndCall(outcome && outcome->raised.has_value());
    if (!outcome) return !ctx_.stopped();
    ctx_.trace.Add(outcome->event);
    if (outcome->raised) {
      // The rank raises; the launcher tears the job down.
      ctx_.Report(*std::move(outcome->raised));
      return false;
    }
    return !ctx_.stopped();
  }

 private:
  SimRun& run_;
  SimContext& ctx_;
  int rank_;
  RankRuntime& rt_;
};

}  // namespace

void RunRankProgram(SimRun& run, int rank) {
  SimHost host(run, rank);
  WorkloadProgram<SimHost> program(host, run.ctx.scenario, run.ctx.layout, rank);
  program.Run();
}

}  // namespace lockstep
