#include "sim/simulation.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "sim/report/analysis.h"
#include "sim/report/decision_log.h"
#include "sim/scenario/did_you_mean.h"
#include "sim/sim_run.h"

namespace lockstep {
namespace {

// Scheduling steps a run is expected to take (PCT places its change points
// among them): about three per rank-call.
uint64_t ExpectedSteps(const Scenario& s, const ParallelLayout& layout) {
  const int layers = s.workload.layers > 0 ? s.workload.layers : s.model.layers;
  const uint64_t calls_per_rank =
      static_cast<uint64_t>(s.workload.steps) *
      static_cast<uint64_t>(2 + 3 * std::max(1, layers / layout.widths().pp));
  return 3 * calls_per_rank * static_cast<uint64_t>(layout.world_size());
}

std::unique_ptr<SchedulePolicy> ScheduleFor(const Scenario& s, const ParallelLayout& layout,
                                            const SimOptions& o) {
  absl::StatusOr<std::unique_ptr<SchedulePolicy>> schedule =
      MakeSchedule(o.schedule, layout.world_size(), ExpectedSteps(s, layout), o.seed);
  // Simulate() validated the name; the random schedule covers direct users.
  return schedule.ok() ? *std::move(schedule) : MakeRandomSchedule();
}

// "tp [0,1]": as the hardware runner names its groups, so that reports read alike.
std::string GroupName(const ParallelLayout& layout, const GroupObject& object, GroupId id) {
  return absl::StrFormat("%s %s", object.name, layout.PeersToString(id));
}

std::vector<int> Members(const ParallelLayout& layout, GroupId id) {
  const std::span<const int> peers = layout.Peers(id);
  return std::vector<int>(peers.begin(), peers.end());
}

// The simulator as a wiring runtime (sim/replica/group_wiring.h) for one
// rank: votes read every member's raw local state at once (set-up takes no
// virtual time), and the simulated resources are built once per group
// instance, by the first member that wires it.
// What the ranks' wiring runtimes share: the group instances built so far,
// and answers every member of a group would otherwise compute again (a
// group of 16384 ranks made that 16384² steps).
struct WiringShared {
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, int32_t> workspace_index;
  absl::flat_hash_map<std::pair<int, uint32_t>, int32_t> comm_index, custom_index;
  // Votes per (group, ballot field), valid within one wiring pass (a pass
  // reads a field no rank writes in it; cleared between passes).
  absl::flat_hash_map<std::pair<uint32_t, int>, bool> votes;
  // Hardware answers per (peer list, query); the lists are the layout's.
  absl::flat_hash_map<std::tuple<const int*, size_t, int>, bool> hardware;
};

class SimWiringRuntime final : public WiringRuntime {
 public:
  SimWiringRuntime(SimRun& run, int rank, WiringShared& shared)
      : run_(run),
        backend_context_{rank, &run.ranks[static_cast<size_t>(rank)], &run.ctx.faults},
        shared_(shared),
        workspace_index_(shared.workspace_index),
        comm_index_(shared.comm_index),
        custom_index_(shared.custom_index) {}

  absl::StatusOr<std::vector<VoteBallot>> GatherBallots(GroupId group, const VoteBallot&) override {
    std::vector<VoteBallot> ballots;
    for (int peer : run_.ctx.layout.Peers(group)) {
      ballots.push_back(run_.ranks[static_cast<size_t>(peer)].wiring.ballot);
    }
    return ballots;
  }
  absl::StatusOr<bool> Vote(GroupId group, const VoteBallot&, bool VoteBallot::*field) override {
    const int key = field == &VoteBallot::workspace_allocated ? 0
                    : field == &VoteBallot::library_loaded    ? 1
                                                              : 2;
    auto [it, fresh] = shared_.votes.try_emplace(std::pair{group.value, key}, true);
    if (fresh) {
      for (int peer : run_.ctx.layout.Peers(group)) {
        it->second &= run_.ranks[static_cast<size_t>(peer)].wiring.ballot.*field;
      }
    }
    return it->second;
  }
  bool FusedKernelReachable(std::span<const int> peers) override {
    return Hardware(peers, 0, [&](const std::vector<int>& v) {
      return run_.ctx.hardware.FusedKernelReachable(v);
    });
  }
  bool FullNvlink(std::span<const int> peers) override {
    return Hardware(peers, 1,
                    [&](const std::vector<int>& v) { return run_.ctx.hardware.FullNvlink(v); });
  }
  bool SameNode(std::span<const int> peers) override {
    return Hardware(peers, 2,
                    [&](const std::vector<int>& v) { return run_.ctx.hardware.SameNode(v); });
  }

  absl::StatusOr<WorkspaceHandle> CreateWorkspace(WorkspaceKind kind, GroupId group,
                                                  const WorkspaceCapacity& capacity,
                                                  uint32_t generation, bool) override {
    auto [it, inserted] =
        workspace_index_.try_emplace(std::pair{static_cast<uint32_t>(kind), group.value},
                                     static_cast<int32_t>(run_.workspaces.size()));
    if (inserted) {
      const ParallelLayout& layout = run_.ctx.layout;
      std::vector<int> members = Members(layout, group);
      run_.workspaces.push_back(std::make_unique<SimWorkspace>(
          run_.ctx, absl::StrFormat("%s%s", WorkspaceKindName(kind), layout.PeersToString(group)),
          kind, members, group, capacity));
      if (generation != 0) run_.workspaces.back()->Rebind(members, group, generation);
    }
    return it->second;
  }

  absl::StatusOr<std::unique_ptr<FusedAllReduceBackend>> MakeFused(
      int, GroupId, WorkspaceHandle workspace) override {
    return std::make_unique<SimFusedBackend>(backend_context_,
                                             run_.workspaces[static_cast<size_t>(workspace)].get());
  }
  absl::StatusOr<std::unique_ptr<CustomAllReduceBackend>> MakeCustom(
      int object, GroupId group, const CustomAgreedState&) override {
    return std::make_unique<SimCustomBackend>(backend_context_,
                                              Instance(run_.customs, custom_index_, object, group));
  }
  absl::StatusOr<std::unique_ptr<NcclBackend>> MakeNccl(int object, GroupId group) override {
    return std::make_unique<SimNcclBackend>(backend_context_,
                                            Instance(run_.comms, comm_index_, object, group));
  }

 private:
  // The simulated resource of group `group` of `object` (a communicator, a
  // custom all-reduce), built by the first member that asks.
  template <class T>
  T* Instance(std::vector<std::unique_ptr<T>>& all,
              absl::flat_hash_map<std::pair<int, uint32_t>, int32_t>& index, int object,
              GroupId group) {
    auto [it, inserted] =
        index.try_emplace(std::pair{object, group.value}, static_cast<int32_t>(all.size()));
    if (inserted) {
      const ParallelLayout& layout = run_.ctx.layout;
      all.push_back(std::make_unique<T>(
          run_.ctx, GroupName(layout, layout.objects()[static_cast<size_t>(object)], group),
          Members(layout, group)));
    }
    return all[static_cast<size_t>(it->second)].get();
  }

  template <class Query>
  bool Hardware(std::span<const int> peers, int query, const Query& ask) {
    auto [it, fresh] = shared_.hardware.try_emplace(std::tuple{peers.data(), peers.size(), query});
    if (fresh) it->second = ask(std::vector<int>(peers.begin(), peers.end()));
    return it->second;
  }

  SimRun& run_;
  SimBackendContext backend_context_;
  WiringShared& shared_;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, int32_t>& workspace_index_;
  absl::flat_hash_map<std::pair<int, uint32_t>, int32_t>& comm_index_;
  absl::flat_hash_map<std::pair<int, uint32_t>, int32_t>& custom_index_;
};

}  // namespace

SimRun::SimRun(const Scenario& scenario, const ParallelLayout& layout,
               const DispatchPolicy& run_policy, const SimOptions& run_options)
    : ctx(scenario, layout, run_options.seed, run_options.exact_provenance,
          ScheduleFor(scenario, layout, run_options), run_options.keep_trace),
      policy(run_policy),
      options(run_options),
      ranks(static_cast<size_t>(layout.world_size())),
      mailbox(ctx, layout.world_size()),
      token_skew(static_cast<size_t>(layout.world_size()), 0) {}

absl::Status SimRun::Setup() {
  const ParallelLayout& layout = ctx.layout;
  const Scenario& s = ctx.scenario;
  const int world = layout.world_size();
  SimFaultPlan* plan = ctx.faults;
  absl::StatusOr<ReplicaConfig> resolved = ResolveReplicaConfig(s, layout, policy);
  if (!resolved.ok()) return resolved.status();
  replica = *std::move(resolved);
  const WiringConfig& config = replica.wiring;
  tags = ReplicaTags(layout, policy, config, plan);
  // Every rank's raw local state exists before anything is agreed.
  for (int r = 0; r < world; ++r) {
    InitialLocalState(config, r, plan, ranks[static_cast<size_t>(r)].wiring);
  }
  // The votes read every member's state at once, so every rank's workspaces
  // are wired before any rank's groups (the TP vote reads their outcome).
  WiringShared shared;
  // Decision records no report can name are dropped as the run goes, unless
  // the caller asked for the whole log.
  if (options.keep_decisions && !options.keep_decision_log) {
    const uint64_t floor = options.compact_decisions_at != 0 ? options.compact_decisions_at
                                                             : kMinDecisionLogCompaction;
    log_budget.limit = floor;
    log_budget.compact = [this, floor] {
      log_budget.held = CompactDecisionLogs(*this);
      log_budget.limit = std::max(floor, 2 * log_budget.held);
    };
  }
  for (int r = 0; r < world; ++r) {
    RankRuntime& rt = ranks[static_cast<size_t>(r)];
    rt.keep_decisions = options.keep_decisions;
    rt.log_budget = &log_budget;
    SimWiringRuntime runtime(*this, r, shared);
    if (absl::Status st = WireWorkspaces(config, layout, policy, r, plan, runtime, rt.wiring);
        !st.ok()) {
      return st;
    }
  }
  shared.votes.clear();  // the TP vote reads what the first pass wrote
  for (int r = 0; r < world; ++r) {
    SimWiringRuntime runtime(*this, r, shared);
    if (absl::Status st = WireGroups(config, layout, policy, tags, r, runtime,
                                     ranks[static_cast<size_t>(r)].wiring);
        !st.ok()) {
      return st;
    }
  }
  // Each rank's fusion workspaces, in creation order (what its program sets
  // up first): one pass over the workspaces, not one per rank.
  workspaces_of.assign(static_cast<size_t>(world), {});
  for (size_t w = 0; w < workspaces.size(); ++w) {
    for (int peer : workspaces[w]->peers()) {
      std::vector<int32_t>& mine = workspaces_of[static_cast<size_t>(peer)];
      if (mine.empty() || mine.back() != static_cast<int32_t>(w)) {
        mine.push_back(static_cast<int32_t>(w));
      }
    }
  }
  if (s.memory == MemoryModel::kRelaxed) {
    relaxed = std::make_unique<RelaxedVisibility>(ctx.seed);
    ctx.relaxed = relaxed.get();
  }
  // Run-ahead where nothing needs a call's members interleaved: faults act
  // at calls (kills, raised backends, injected inputs, stragglers), relaxed
  // memory delays the stores of the kernels NCCL runs beside, and numeric
  // data checks against inputs a rank has moved past by the time its posted
  // call completes.
  if (options.run_ahead && ctx.faults == nullptr && ctx.relaxed == nullptr && !ctx.numeric_mode) {
    ctx.streams.assign(static_cast<size_t>(world), SimContext::Stream{});
  }
  // Work outside the ranks exists only under relaxed memory (stores in
  // flight) or with faults (a delayed push is deferred: SimContext::Defer).
  // Without either the hook is not installed: asked after every scheduling
  // step through std::function, it cost ~2.5 % of a rank-call of the NCCL
  // row of sim_bench to answer that nothing was pending.
  if (ctx.relaxed != nullptr || ctx.faults != nullptr) {
    ctx.scheduler.set_pending_work([this](uint64_t step, bool idle) {
      if (ctx.relaxed == nullptr && ctx.deferred.empty()) return false;
      // Stores in flight land first; with no rank runnable, one at a time.
      if (ctx.relaxed != nullptr && ctx.relaxed->Deliver(step, idle) && idle) return true;
      return ctx.RunDeferred(step, idle);
    });
  }
  for (int r = 0; r < world; ++r) {
    ctx.scheduler.Spawn(
        r, [this, r] { RunRankProgram(*this, r); }, Fiber::kDefaultStackBytes);
  }
  return absl::OkStatus();
}

void SimRun::Execute() { ctx.scheduler.Run(); }

namespace {

// Every rank's decision log, from the records the ranks kept. A rank that
// made two records for one call (a mutant that falls back after its backend
// raised) logs its last decision, as the first divergent decision reads it.
std::vector<std::vector<nlohmann::json>> DecisionLogOf(const SimRun& run) {
  const ParallelLayout& layout = run.ctx.layout;
  std::vector<std::vector<nlohmann::json>> logs;
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    std::vector<nlohmann::json>& log = logs.emplace_back();
    log.push_back(
        DecisionLogHeader(static_cast<int>(r), layout.world_size(), "sim", run.ctx.scenario.name));
    const CallLog* previous = nullptr;
    for (const CallLog& c : run.ranks[r].calls) {
      const bool again = previous != nullptr && previous->object == c.object &&
                         previous->record.group == c.record.group &&
                         previous->record.seq == c.record.seq;
      if (again) log.pop_back();
      log.push_back(DecisionLogEntry(static_cast<int64_t>(log.size()) - 1, layout, c.object,
                                     c.site.ToString(), c.record));
      previous = &c;
    }
  }
  return logs;
}

}  // namespace

SimResult SimRun::Analyze() { return AnalyzeRun(*this); }

absl::StatusOr<SimResult> Simulate(const Scenario& scenario, const SimOptions& options,
                                   const PolicyRegistry& registry) {
  if (!scenario.faults.empty() && options.faults == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scenario '%s' declares %d fault(s) but the run has no fault plan to inject them "
        "(run it through lockstep sim, or pass SimOptions::faults)",
        scenario.name, scenario.faults.size()));
  }
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  if (absl::StatusOr<std::unique_ptr<SchedulePolicy>> schedule =
          MakeSchedule(options.schedule, layout->world_size(), 1, options.seed);
      !schedule.ok()) {
    return schedule.status();
  }
  const std::string& policy_name =
      options.policy.empty() ? scenario.dispatch.policy : options.policy;
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> policy = registry.Create(policy_name);
  if (!policy.ok() && options.policy.empty()) {
    // The name came from the file: say where, like every other bad input.
    std::vector<std::string_view> names;
    for (const PolicyRegistry::Entry& e : registry.entries()) names.push_back(e.name);
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%d: dispatch.policy: unknown policy '%s'%s (known: %s)",
        scenario.path.empty() ? scenario.name : scenario.path, scenario.dispatch.policy_line,
        policy_name, DidYouMean(policy_name, names),
        absl::StrJoin(names, ", ", [](std::string* out, std::string_view v) { out->append(v); })));
  }
  if (!policy.ok()) return policy.status();

  auto run_once = [&](const SimOptions& o) -> absl::StatusOr<SimResult> {
    SimRun run(scenario, *layout, **policy, o);
    run.ctx.faults = o.faults;
    if (absl::Status s = run.Setup(); !s.ok()) return s;
    if (o.customize) o.customize(run);
    run.Execute();
    if (run.ctx.run_ahead_fallback) {
      SimResult unfinished;
      unfinished.interleaved_rerun = true;
      return unfinished;
    }
    SimResult result = run.Analyze();
    if (run.ctx.needs_exact_rerun) result.exact_rerun = true;
    if (o.keep_decision_log) result.decision_log = DecisionLogOf(run);
    if (run.replica.fusion_backend == FusionBackend::kCutedsl) {
      result.unmodelled.push_back(
          "the fused AR + norm runs on FlashInfer's cutedsl backend, which lockstep does not "
          "implement: its decisions are SGLang 0.5.23's, its calls run lockstep's Lamport "
          "kernel protocol");
    }
    return result;
  };
  absl::StatusOr<SimResult> result = run_once(options);
  if (result.ok() && result->interleaved_rerun) {
    // What a run-ahead run cannot follow (a watchdog firing on a posted
    // call): the seed again, every call interleaved.
    SimOptions interleaved = options;
    interleaved.run_ahead = false;
    result = run_once(interleaved);
    if (result.ok()) result->interleaved_rerun = true;
  }
  if (result.ok() && result->exact_rerun && !options.exact_provenance) {
    // Same seed, same schedule: the rerun reaches the same finding and names
    // the contributors.
    SimOptions exact = options;
    exact.exact_provenance = true;
    if (result->interleaved_rerun) exact.run_ahead = false;
    absl::StatusOr<SimResult> named = run_once(exact);
    if (named.ok() && named->verdict == result->verdict &&
        named->trace_hash == result->trace_hash) {
      named->exact_rerun = true;
      named->interleaved_rerun = result->interleaved_rerun;
      return named;
    }
  }
  return result;
}

}  // namespace lockstep
