#include "sim/simulation.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
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

bool HasCustomAllReduce(const GroupObject& object) {
  for (GroupRole r : object.roles) {
    if (r == GroupRole::kTp || r == GroupRole::kAttnTp || r == GroupRole::kMoeTp) return true;
  }
  return false;
}

std::string GroupName(const ParallelLayout& layout, const GroupObject& object, GroupId id) {
  return absl::StrFormat("%s%s", object.name, layout.PeersToString(id));
}

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
  const auto& objects = layout.objects();
  SimFaultPlan* plan = ctx.faults;
  tags = policy.TagGroups(layout, s.dispatch.fused_backend);
  if (plan != nullptr) plan->AdjustTags(layout, tags);

  // Each rank's raw local state, before anything is agreed.
  for (int r = 0; r < world; ++r) {
    RankLocalState& local = ranks[static_cast<size_t>(r)].local;
    local.fused_backend_flag = s.dispatch.fused_backend;
    local.fp32_acc_env = false;
    if (plan != nullptr) plan->InitLocalState(r, local);
  }

  // Fusion workspaces, each rendezvoused on one subgroup: attention-TP, and
  // the MoE one on MOE_EP when moe_ep > 1, else MOE_TP. Whether one is
  // initialised, and whether the library is there, is voted across its
  // members (a workspace the kernel cannot reach fails on all of them).
  attn_workspace_of.assign(static_cast<size_t>(world), -1);
  moe_workspace_of.assign(static_cast<size_t>(world), -1);
  const WorkspaceCapacity capacity{s.dispatch.max_tokens, s.model.hidden, s.dispatch.dtype};
  auto make_workspaces = [&](WorkspaceKind kind, GroupRole intended, std::vector<int32_t>& of) {
    const SimFaultPlan::Binding binding = plan != nullptr
                                              ? plan->BindWorkspaces(layout, kind, intended)
                                              : SimFaultPlan::Binding{intended, 0};
    for (GroupId id : layout.Object(binding.role).members) {
      if (layout.GroupSize(id) <= 1) continue;
      auto peers = layout.Peers(id);
      std::vector<int> members(peers.begin(), peers.end());
      bool all_allocated = ctx.hardware.FusedKernelReachable(members);
      for (int r : members)
        all_allocated &= ranks[static_cast<size_t>(r)].local.workspace_allocated;
      workspace_votes.push_back({all_allocated});
      workspaces.push_back(std::make_unique<SimWorkspace>(
          ctx, absl::StrFormat("%s%s", WorkspaceKindName(kind), layout.PeersToString(id)), kind,
          members, id, capacity));
      if (binding.generation != 0) {
        workspaces.back()->Rebind(members, id, binding.generation);
      }
      for (int r : members) {
        of[static_cast<size_t>(r)] = static_cast<int32_t>(workspaces.size() - 1);
      }
    }
  };
  if (s.dispatch.fused_backend) {
    make_workspaces(WorkspaceKind::kAttnTp, GroupRole::kAttnTp, attn_workspace_of);
    make_workspaces(WorkspaceKind::kMoe, MoeWorkspaceRole(layout.widths()), moe_workspace_of);
  }

  // One NCCL communicator per subgroup of every group object; a custom
  // all-reduce on the TP, attention-TP and MoE-TP objects (SGLang creates
  // none on the expert group).
  comm_of.assign(objects.size(), std::vector<int32_t>(static_cast<size_t>(world), -1));
  custom_of.assign(objects.size(), std::vector<int32_t>(static_cast<size_t>(world), -1));
  for (size_t o = 0; o < objects.size(); ++o) {
    for (GroupId id : objects[o].members) {
      if (layout.GroupSize(id) <= 1) continue;
      auto peers = layout.Peers(id);
      std::vector<int> members(peers.begin(), peers.end());
      comms.push_back(std::make_unique<SimComm>(ctx, GroupName(layout, objects[o], id), members));
      for (int r : members) {
        comm_of[o][static_cast<size_t>(r)] = static_cast<int32_t>(comms.size() - 1);
      }
      if (s.dispatch.custom_allreduce && HasCustomAllReduce(objects[o])) {
        customs.push_back(
            std::make_unique<SimCustomAllReduce>(ctx, GroupName(layout, objects[o], id), members));
        for (int r : members) {
          custom_of[o][static_cast<size_t>(r)] = static_cast<int32_t>(customs.size() - 1);
        }
      }
    }
  }

  for (int r = 0; r < world; ++r) {
    RankRuntime& rt = ranks[static_cast<size_t>(r)];
    rt.keep_decisions = options.keep_decisions;
    const SimBackendContext backend_context{r, &rt, &ctx.faults};
    // Library availability is process-wide: voted across the TP group (SGLang
    // _sync_allreduce_unavailable_across_tp), which holds every workspace the
    // rank shares.
    bool tp_loaded = true;
    for (int peer : layout.Peers(layout.GroupOf(GroupRole::kTp, r))) {
      tp_loaded &= ranks[static_cast<size_t>(peer)].local.library_loaded;
    }
    const bool library_available = policy.LibraryAvailable(rt.local.library_loaded, tp_loaded);
    auto view = [&](int32_t index, WorkspaceKind kind) {
      Workspace w;
      if (index < 0) return w;
      const SimWorkspace& inst = *workspaces[static_cast<size_t>(index)];
      const WorkspaceVote& vote = workspace_votes[static_cast<size_t>(index)];
      w.kind = kind;
      w.group = inst.group();
      w.world_size = static_cast<int>(inst.peers().size());
      w.capacity = inst.capacity();
      w.generation = inst.generation();
      w.initialized = policy.WorkspaceInitialized(rt.local.workspace_allocated, vote.allocated);
      return w;
    };
    rt.attn_workspace = view(attn_workspace_of[static_cast<size_t>(r)], WorkspaceKind::kAttnTp);
    rt.moe_workspace = view(moe_workspace_of[static_cast<size_t>(r)], WorkspaceKind::kMoe);
    rt.fused.resize(objects.size());
    rt.custom.resize(objects.size());
    rt.nccl.resize(objects.size());
    for (size_t o = 0; o < objects.size(); ++o) {
      const GroupId group = layout.GroupOf(objects[o].roles.front(), r);
      const int size = layout.GroupSize(group);
      auto peers = layout.Peers(group);
      const WorkspaceKind hint = tags.ForObject(static_cast<int>(o));
      GroupBackends backends;
      backends.local = &rt.local;
      const int32_t ws_index =
          hint == WorkspaceKind::kAttnTp ? attn_workspace_of[static_cast<size_t>(r)]
          : hint == WorkspaceKind::kMoe  ? moe_workspace_of[static_cast<size_t>(r)]
                                         : -1;
      if (size > 1 && ws_index >= 0) {
        rt.fused[o] = std::make_unique<SimFusedBackend>(
            backend_context, workspaces[static_cast<size_t>(ws_index)].get());
        rt.fused[o]->set_agreed(FusedAgreedState{
            s.dispatch.fused_backend && library_available,
            hint == WorkspaceKind::kAttnTp ? &rt.attn_workspace : &rt.moe_workspace, group, size});
        backends.fused = rt.fused[o].get();
      }
      if (const int32_t c = custom_of[o][static_cast<size_t>(r)]; c >= 0) {
        rt.custom[o] = std::make_unique<SimCustomBackend>(backend_context,
                                                          customs[static_cast<size_t>(c)].get());
        std::vector<int> members(peers.begin(), peers.end());
        rt.custom[o]->set_agreed(CustomAgreedState{true, s.dispatch.custom_max_bytes, size,
                                                   ctx.hardware.FullNvlink(members),
                                                   ctx.hardware.SameNode(members)});
        backends.custom = rt.custom[o].get();
      }
      if (const int32_t c = comm_of[o][static_cast<size_t>(r)]; c >= 0) {
        rt.nccl[o] =
            std::make_unique<SimNcclBackend>(backend_context, comms[static_cast<size_t>(c)].get());
        backends.nccl = rt.nccl[o].get();
      }
      rt.coordinators.push_back(std::make_unique<GroupCoordinator>(
          objects[o].name, group, size, layout.RankInGroup(group, r), hint, backends, &policy));
    }
  }
  ctx.scheduler.set_pending_work(
      [this](uint64_t step, bool idle) { return ctx.RunDeferred(step, idle); });
  if (plan != nullptr) {
    if (absl::Status st = plan->AfterSetup(*this); !st.ok()) return st;
  }
  for (int r = 0; r < world; ++r) {
    ctx.scheduler.Spawn(
        r, [this, r] { RunRankProgram(*this, r); }, Fiber::kDefaultStackBytes);
  }
  return absl::OkStatus();
}

void SimRun::Execute() { ctx.scheduler.Run(); }

namespace {

// The earliest call (by virtual time) whose decision differs between members
// of its group, explained by the predicate inputs that differed.
nlohmann::json FirstDivergentDecision(const SimRun& run, std::string* line) {
  const ParallelLayout& layout = run.ctx.layout;
  // (object, group, seq) -> (rank, log)
  std::map<std::tuple<int32_t, uint32_t, uint64_t>, std::vector<std::pair<int, const CallLog*>>>
      calls;
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    for (const CallLog& c : run.ranks[r].calls) {
      calls[{c.object, c.record.group.value, c.record.seq}].push_back({static_cast<int>(r), &c});
    }
  }
  for (const auto& [key, members] : calls) {
    const GroupId group{std::get<1>(key)};
    const size_t expected = static_cast<size_t>(layout.GroupSize(group));
    std::map<uint64_t, std::vector<int>> by_fingerprint;
    for (const auto& [rank, log] : members) {
      DecisionRecord normalized = log->record;
      by_fingerprint[DecisionFingerprint(normalized)].push_back(rank);
    }
    if (by_fingerprint.size() == 1 && members.size() == expected) continue;
    // Describe each side.
    nlohmann::json sides = nlohmann::json::array();
    std::vector<std::string> texts;
    for (const auto& [fp, ranks] : by_fingerprint) {
      const CallLog* log = nullptr;
      for (const auto& [rank, l] : members) {
        if (rank == ranks.front()) log = l;
      }
      // Name this side's inputs against a member of another side.
      std::vector<std::string> inputs;
      for (const auto& [rank2, other] : members) {
        if (DecisionFingerprint(other->record) == fp) continue;
        inputs = DescribeDifferences(log->record, other->record, &layout);
        break;
      }
      std::string side = absl::StrFormat(
          "rank%s %s chose %s%s%s", ranks.size() > 1 ? "s" : "", RankRanges(ranks),
          BackendKindName(log->record.backend),
          log->record.algorithm != Algorithm::kNone
              ? absl::StrFormat("/%s", AlgorithmName(log->record.algorithm))
              : "",
          inputs.empty() ? "" : absl::StrFormat(": %s", absl::StrJoin(inputs, ", ")));
      texts.push_back(side);
      sides.push_back({{"ranks", ranks},
                       {"backend", std::string(BackendKindName(log->record.backend))},
                       {"algorithm", std::string(AlgorithmName(log->record.algorithm))},
                       {"tokens", log->record.call.tensor.tokens()},
                       {"explanation", ExplainDecision(log->record, &layout)},
                       {"differing_inputs", inputs}});
    }
    std::vector<int> missing;
    for (int r : layout.Peers(group)) {
      bool found = false;
      for (const auto& [rank, log] : members) found |= rank == r;
      if (!found) missing.push_back(r);
    }
    if (!missing.empty()) {
      texts.push_back(absl::StrFormat("rank%s %s never made this call",
                                      missing.size() > 1 ? "s" : "", RankRanges(missing)));
    }
    const std::string& object = layout.objects()[static_cast<size_t>(std::get<0>(key))].name;
    *line = absl::StrFormat("%s %s call %d (%s): %s", object, layout.PeersToString(group),
                            std::get<2>(key), members.front().second->site.ToString(),
                            absl::StrJoin(texts, "; "));
    return {{"group", object},         {"peers", layout.PeersToString(group)},
            {"seq", std::get<2>(key)}, {"site", members.front().second->site.ToString()},
            {"sides", sides},          {"missing_ranks", missing}};
  }
  return nullptr;
}

}  // namespace

SimResult SimRun::Analyze() {
  SimResult result;
  result.policy = std::string(policy.name());
  result.trace_hash = ctx.trace.hash();
  result.schedule_steps = ctx.scheduler.steps();
  for (const RankRuntime& rt : ranks) result.rank_calls += rt.calls_made;
  for (int64_t c : ctx.clock) result.virtual_ns = std::max(result.virtual_ns, c);
  if (options.keep_trace) result.trace_events = ctx.trace.events();

  if (ctx.finding) {
    result.verdict = ctx.finding->verdict;
    result.summary = ctx.finding->summary;
    result.details = ctx.finding->details;
    result.details["observed_by_rank"] = ctx.finding->rank;
    result.details["virtual_time_ns"] = ctx.finding->at_ns;
    return result;
  }
  const std::vector<int> blocked = ctx.scheduler.BlockedRanks();
  std::vector<int> dead;
  for (int r = 0; r < ctx.scheduler.num_ranks(); ++r) {
    if (ctx.scheduler.status(r) == RankStatus::kDead) dead.push_back(r);
  }
  if (blocked.empty() && !dead.empty()) {
    result.verdict = Verdict::kFailStop;
    result.summary =
        absl::StrFormat("rank%s %s died; every other rank finished, and the launcher stops the job",
                        dead.size() > 1 ? "s" : "", RankRanges(dead));
    result.details = {{"dead_ranks", dead}};
    return result;
  }
  if (blocked.empty()) {
    result.verdict = Verdict::kClean;
    result.summary =
        absl::StrFormat("every rank finished; %d all-reduces checked", result.rank_calls);
    return result;
  }

  // Deadlock: nobody can run. Each blocked rank's wait, the wait-for graph,
  // and the first call where decisions differed.
  const Scenario& s = ctx.scenario;
  nlohmann::json waits = nlohmann::json::array();
  std::string dot = "digraph wait_for {\n  rankdir=LR;\n  node [shape=box, fontname=monospace];\n";
  int64_t first_timeout = -1;
  int first_timeout_rank = -1;
  std::string first_timeout_kind;
  // Waits a fault made hopeless: on a dead rank or on a write it destroyed,
  // directly or through ranks that are themselves stuck that way. Only those
  // are rescued, loudly, by the bounded waits and the watchdog.
  std::vector<bool> hopeless(static_cast<size_t>(ctx.scheduler.num_ranks()), false);
  for (int r : dead) hopeless[static_cast<size_t>(r)] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (int r : blocked) {
      if (hopeless[static_cast<size_t>(r)]) continue;
      const BlockReason& reason = ctx.scheduler.reason(r);
      bool stuck = reason.waitable->WaitsOnLostWrite(r, reason.detail);
      for (int target : reason.waitable->WaitsOn(r, reason.detail)) {
        stuck |= hopeless[static_cast<size_t>(target)];
      }
      if (stuck) {
        hopeless[static_cast<size_t>(r)] = true;
        changed = true;
      }
    }
  }
  const bool all_hopeless = std::all_of(blocked.begin(), blocked.end(),
                                        [&](int r) { return hopeless[static_cast<size_t>(r)]; });
  for (int r : blocked) {
    const BlockReason& reason = ctx.scheduler.reason(r);
    const std::string what = reason.waitable->DescribeWait(r, reason.detail);
    const std::vector<int> on = reason.waitable->WaitsOn(r, reason.detail);
    const bool kernel = dynamic_cast<const SimComm*>(reason.waitable) == nullptr &&
                        dynamic_cast<const SimMailbox*>(reason.waitable) == nullptr;
    const int64_t fires =
        reason.since_ns +
        static_cast<int64_t>((kernel ? s.timeouts.kernel_wait_ms : s.timeouts.watchdog_ms) * 1e6);
    if (first_timeout < 0 || fires < first_timeout) {
      first_timeout = fires;
      first_timeout_rank = r;
      first_timeout_kind = kernel ? "the fused kernel's bounded wait" : "the NCCL watchdog";
    }
    waits.push_back(
        {{"rank", r}, {"waits_for", what}, {"waits_on", on}, {"since_ns", reason.since_ns}});
    dot += absl::StrFormat("  r%d [label=\"rank %d\\n%s\"];\n", r, r,
                           absl::StrReplaceAll(what, {{"\"", "'"}}));
    for (int target : on) dot += absl::StrFormat("  r%d -> r%d;\n", r, target);
  }
  for (int r : dead)
    dot += absl::StrFormat("  r%d [label=\"rank %d\\ndead\", style=dashed];\n", r, r);
  dot += "}\n";
  result.wait_for_dot = std::move(dot);
  if (all_hopeless) {
    result.verdict = Verdict::kFailStop;
    result.summary = absl::StrFormat(
        "ranks %s wait for %s; %s of rank %d fires at %.3f ms virtual time and the job stops",
        RankRanges(blocked),
        dead.empty()
            ? std::string("writes an injected fault destroyed")
            : absl::StrFormat("dead rank%s %s", dead.size() > 1 ? "s" : "", RankRanges(dead)),
        first_timeout_kind, first_timeout_rank, static_cast<double>(first_timeout) / 1e6);
    result.details = {{"blocked", waits},
                      {"dead_ranks", dead},
                      {"fires",
                       {{"what", first_timeout_kind},
                        {"rank", first_timeout_rank},
                        {"virtual_time_ns", first_timeout}}}};
    return result;
  }
  std::string decision_line;
  nlohmann::json divergence = FirstDivergentDecision(*this, &decision_line);
  result.verdict = Verdict::kHang;
  result.summary = absl::StrFormat(
      "ranks %s wait on each other with no way forward%s", RankRanges(blocked),
      decision_line.empty() ? ""
                            : absl::StrFormat("; first divergent decision: %s", decision_line));
  result.details = {{"blocked", waits},
                    {"first_divergent_decision", divergence},
                    {"dead_ranks", dead},
                    {"would_fire",
                     {{"what", first_timeout_kind},
                      {"rank", first_timeout_rank},
                      {"virtual_time_ns", first_timeout}}}};
  return result;
}

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
    SimResult result = run.Analyze();
    if (run.ctx.needs_exact_rerun) result.exact_rerun = true;
    return result;
  };
  absl::StatusOr<SimResult> result = run_once(options);
  if (result.ok() && result->exact_rerun && !options.exact_provenance) {
    // Same seed, same schedule: the rerun reaches the same finding and names
    // the contributors.
    SimOptions exact = options;
    exact.exact_provenance = true;
    absl::StatusOr<SimResult> named = run_once(exact);
    if (named.ok() && named->verdict == result->verdict &&
        named->trace_hash == result->trace_hash) {
      named->exact_rerun = true;
      return named;
    }
  }
  return result;
}

}  // namespace lockstep
