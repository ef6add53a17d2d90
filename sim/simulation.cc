#include "sim/simulation.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "sim/sim_run.h"

namespace lockstep {
namespace {

std::unique_ptr<SchedulePolicy> MakeSchedule(const std::string& name) {
  (void)name;
  return MakeRandomSchedule();
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
          MakeSchedule(run_options.schedule), run_options.keep_trace),
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
  tags = policy.TagGroups(layout, s.dispatch.fused_backend);

  // Fusion workspaces, each rendezvoused on one subgroup: attention-TP, and
  // the MoE one on MOE_EP when moe_ep > 1, else MOE_TP. A workspace whose
  // peers the kernel cannot reach fails to initialise on every rank (voted).
  attn_workspace_of.assign(static_cast<size_t>(world), -1);
  moe_workspace_of.assign(static_cast<size_t>(world), -1);
  const WorkspaceCapacity capacity{s.dispatch.max_tokens, s.model.hidden, s.dispatch.dtype};
  auto make_workspaces = [&](WorkspaceKind kind, GroupRole role, std::vector<int32_t>& of) {
    const GroupObject& object = layout.Object(role);
    for (GroupId id : object.members) {
      if (layout.GroupSize(id) <= 1) continue;
      auto peers = layout.Peers(id);
      std::vector<int> members(peers.begin(), peers.end());
      workspace_initialized.push_back(ctx.hardware.FusedKernelReachable(members));
      workspaces.push_back(std::make_unique<SimWorkspace>(
          ctx, absl::StrFormat("%s%s", WorkspaceKindName(kind), layout.PeersToString(id)), kind,
          members, id, capacity));
      for (int r : members)
        of[static_cast<size_t>(r)] = static_cast<int32_t>(workspaces.size() - 1);
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
      for (int r : members)
        comm_of[o][static_cast<size_t>(r)] = static_cast<int32_t>(comms.size() - 1);
      if (s.dispatch.custom_allreduce && HasCustomAllReduce(objects[o])) {
        customs.push_back(
            std::make_unique<SimCustomAllReduce>(ctx, GroupName(layout, objects[o], id), members));
        for (int r : members) {
          custom_of[o][static_cast<size_t>(r)] = static_cast<int32_t>(customs.size() - 1);
        }
      }
    }
  }

  const protocol::SentinelTest sentinel = protocol::SentinelTest::kExactBits;
  for (int r = 0; r < world; ++r) {
    RankRuntime& rt = ranks[static_cast<size_t>(r)];
    rt.keep_decisions = options.keep_decisions;
    auto view = [&](int32_t index, WorkspaceKind kind) {
      Workspace w;
      if (index < 0) return w;
      const SimWorkspace& inst = *workspaces[static_cast<size_t>(index)];
      w.kind = kind;
      w.group = inst.group();
      w.world_size = static_cast<int>(inst.peers().size());
      w.capacity = inst.capacity();
      w.initialized = workspace_initialized[static_cast<size_t>(index)];
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
      const int32_t ws_index =
          hint == WorkspaceKind::kAttnTp ? attn_workspace_of[static_cast<size_t>(r)]
          : hint == WorkspaceKind::kMoe  ? moe_workspace_of[static_cast<size_t>(r)]
                                         : -1;
      if (size > 1 && ws_index >= 0) {
        rt.fused[o] = std::make_unique<SimFusedBackend>(
            r, workspaces[static_cast<size_t>(ws_index)].get(), sentinel, &faults, &rt);
        rt.fused[o]->set_agreed(FusedAgreedState{
            s.dispatch.fused_backend,
            hint == WorkspaceKind::kAttnTp ? &rt.attn_workspace : &rt.moe_workspace, group, size});
        backends.fused = rt.fused[o].get();
      }
      if (const int32_t c = custom_of[o][static_cast<size_t>(r)]; c >= 0) {
        rt.custom[o] = std::make_unique<SimCustomBackend>(r, customs[static_cast<size_t>(c)].get(),
                                                          &faults, &rt);
        std::vector<int> members(peers.begin(), peers.end());
        rt.custom[o]->set_agreed(CustomAgreedState{true, s.dispatch.custom_max_bytes, size,
                                                   ctx.hardware.FullNvlink(members),
                                                   ctx.hardware.SameNode(members)});
        backends.custom = rt.custom[o].get();
      }
      if (const int32_t c = comm_of[o][static_cast<size_t>(r)]; c >= 0) {
        rt.nccl[o] =
            std::make_unique<SimNcclBackend>(r, comms[static_cast<size_t>(c)].get(), &faults, &rt);
        backends.nccl = rt.nccl[o].get();
      }
      rt.coordinators.push_back(std::make_unique<GroupCoordinator>(
          objects[o].name, group, size, layout.RankInGroup(group, r), hint, backends, &policy));
    }
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
  dot += "}\n";
  std::string decision_line;
  nlohmann::json divergence = FirstDivergentDecision(*this, &decision_line);
  result.verdict = Verdict::kHang;
  result.summary = absl::StrFormat(
      "ranks %s wait on each other with no way forward%s", RankRanges(blocked),
      decision_line.empty() ? ""
                            : absl::StrFormat("; first divergent decision: %s", decision_line));
  result.details = {{"blocked", waits},
                    {"first_divergent_decision", divergence},
                    {"would_fire",
                     {{"what", first_timeout_kind},
                      {"rank", first_timeout_rank},
                      {"virtual_time_ns", first_timeout}}}};
  result.wait_for_dot = std::move(dot);
  return result;
}

absl::StatusOr<SimResult> Simulate(const Scenario& scenario, const SimOptions& options,
                                   const PolicyRegistry& registry) {
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  const std::string& policy_name =
      options.policy.empty() ? scenario.dispatch.policy : options.policy;
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> policy = registry.Create(policy_name);
  if (!policy.ok()) return policy.status();

  auto run_once = [&](const SimOptions& o) -> absl::StatusOr<SimResult> {
    SimRun run(scenario, *layout, **policy, o);
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
