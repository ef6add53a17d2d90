// The end-of-run analysis: what a finished simulated run found. The deadlock
// and dead-rank detectors live here (sim/scenario/finding.h lists them all);
// the others report their finding while the run goes on.

#include "sim/report/analysis.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace lockstep {
namespace {

// One group call (object, group, seq) as its members logged it.
struct GroupCall {
  // Each member that made it, in rank order, with its record. A rank that
  // made two records for one call (a mutant that falls back after its backend
  // raised) is on one side only: its last decision.
  std::vector<std::pair<int, const CallLog*>> members;
  // Where the call came in call order: the smallest index it has in its
  // members' own call sequences (CallLog vectors).
  size_t first_position = SIZE_MAX;
};
using GroupCallKey = std::tuple<int32_t, uint32_t, uint64_t>;  // object, group, seq

// Describes one call whose members decided differently (or some never made
// it): each side, the inputs that differed and the missing ranks.
nlohmann::json DescribeDivergence(const ParallelLayout& layout, const GroupCallKey& key,
                                  const GroupCall& call, std::string* line) {
  const GroupId group{std::get<1>(key)};
  const auto& members = call.members;
  std::map<uint64_t, std::vector<int>> by_fingerprint;
  for (const auto& [rank, log] : members) {
    by_fingerprint[DecisionFingerprint(log->record)].push_back(rank);
  }
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
    std::string side =
        absl::StrFormat("rank%s %s chose %s%s%s", ranks.size() > 1 ? "s" : "", RankRanges(ranks),
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
    texts.push_back(absl::StrFormat("rank%s %s never made this call", missing.size() > 1 ? "s" : "",
                                    RankRanges(missing)));
  }
  const std::string& object = layout.objects()[static_cast<size_t>(std::get<0>(key))].name;
  const std::string site = members.front().second->site.ToString();
  *line = absl::StrFormat("%s %s call %d (%s): %s", object, layout.PeersToString(group),
                          std::get<2>(key), site, absl::StrJoin(texts, "; "));
  return {{"group", object},
          {"peers", layout.PeersToString(group)},
          {"seq", std::get<2>(key)},
          {"site", site},
          {"call_position", call.first_position},
          {"sides", sides},
          {"missing_ranks", missing}};
}

// What a member chose for a call, apart from the inputs it chose from: the
// backend and its launch, the call's tensor, and a fused call's workspace.
// Members whose records differ only in predicate inputs decided alike.
std::tuple<int, int, int32_t, bool, int, bool, int, int64_t, int64_t, int, bool, uint32_t, uint32_t>
Choice(const DecisionRecord& r) {
  const bool fused = r.backend == BackendKind::kFused;
  const TensorDesc& t = r.call.tensor;
  return {static_cast<int>(r.backend),
          static_cast<int>(r.algorithm),
          r.blocks,
          r.fp32_acc,
          static_cast<int>(r.kernel_flags),
          r.norm_fused,
          static_cast<int>(t.ndim),
          t.tokens(),
          t.hidden(),
          static_cast<int>(t.dtype),
          t.contiguous,
          fused ? r.workspace_group.value : 0u,
          fused ? r.workspace_generation : 0u};
}

// The first call, in call order, at which the members of its group chose
// differently, explained by the inputs that differed. Call order: the
// smallest index the call has in its members' own call sequences; ties go to
// the lower (object, group, seq). A call whose members made the same choice
// is never reported before one whose members did not: not when only the
// inputs they chose from differed (reported only when no call's members
// chose differently), nor when some member never made it because it is
// blocked at an earlier call elsewhere (reported only when no call's members
// decided differently at all, as where the call sequences part). With
// `choices_only`, only a call whose members chose differently is reported
// (a run a finding stopped: calls its peers had not reached yet are no cause).
nlohmann::json FirstDivergentDecision(const SimRun& run, std::string* line,
                                      bool choices_only = false) {
  const ParallelLayout& layout = run.ctx.layout;
  std::map<GroupCallKey, GroupCall> calls;
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const std::vector<CallLog>& log = run.ranks[r].calls;
    for (size_t i = 0; i < log.size(); ++i) {
      const CallLog& c = log[i];
      GroupCall& call = calls[{c.object, c.record.group.value, c.record.seq}];
      call.first_position = std::min(call.first_position, static_cast<size_t>(c.position));
      if (!call.members.empty() && call.members.back().first == static_cast<int>(r)) {
        call.members.back().second = &c;
      } else {
        call.members.push_back({static_cast<int>(r), &c});
      }
    }
  }
  // The earliest call whose members chose differently, the earliest whose
  // members chose alike from different inputs, and the earliest whose members
  // agreed but not all made it.
  using Entry = std::pair<const GroupCallKey, GroupCall>;
  const Entry* chose = nullptr;
  const Entry* inputs = nullptr;
  const Entry* sequence = nullptr;
  auto keep_earliest = [](const Entry*& best, const Entry& c) {
    // The map is visited in key order, so a tie keeps the lower key.
    if (best == nullptr || c.second.first_position < best->second.first_position) best = &c;
  };
  for (const Entry& entry : calls) {
    const auto& [key, call] = entry;
    const GroupId group{std::get<1>(key)};
    const DecisionRecord& first = call.members.front().second->record;
    bool same_choice = true, same_decision = true;
    for (const auto& [rank, log] : call.members) {
      same_choice &= Choice(log->record) == Choice(first);
      same_decision &= DecisionFingerprint(log->record) == DecisionFingerprint(first);
    }
    if (!same_choice) {
      keep_earliest(chose, entry);
    } else if (!same_decision) {
      keep_earliest(inputs, entry);
    } else if (call.members.size() != static_cast<size_t>(layout.GroupSize(group))) {
      keep_earliest(sequence, entry);
    }
  }
  const Entry* reported = chose != nullptr ? chose : inputs != nullptr ? inputs : sequence;
  if (choices_only) reported = chose;
  if (reported == nullptr) return nullptr;
  return DescribeDivergence(layout, reported->first, reported->second, line);
}

// Every error a rank's backend raised that its policy swallowed (details),
// and a line naming the first of each rank that swallowed any (summary):
// "rank 3 swallowed 'CUDA error: ...' from its fused all-reduce at step 1
// layer 0 attn_out and fell back to nccl".
nlohmann::json SwallowedErrors(const SimRun& run, std::string* line) {
  const ParallelLayout& layout = run.ctx.layout;
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::string> texts;
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    const RankRuntime& rt = run.ranks[r];
    for (const SwallowedError& e : rt.swallowed) {
      const std::string then =
          e.fell_back_to ? absl::StrFormat("fell back to %s", BackendKindName(*e.fell_back_to))
                         : std::string("carried on as if it had run");
      if (&e == &rt.swallowed.front()) {
        texts.push_back(absl::StrFormat(
            "rank %d swallowed '%s' from its %s all-reduce at %s and %s%s", r, e.error,
            BackendKindName(e.record.backend), e.site.ToString(), then,
            rt.swallowed_count > 1
                ? absl::StrFormat(" (and %d more swallowed error%s)", rt.swallowed_count - 1,
                                  rt.swallowed_count > 2 ? "s" : "")
                : ""));
      }
      out.push_back({{"rank", r},
                     {"call", e.call},
                     {"group", layout.objects()[static_cast<size_t>(e.object)].name},
                     {"peers", layout.PeersToString(e.record.group)},
                     {"seq", e.record.seq},
                     {"site", e.site.ToString()},
                     {"backend", std::string(BackendKindName(e.record.backend))},
                     {"error", e.error},
                     {"fell_back_to",
                      e.fell_back_to ? nlohmann::json(std::string(BackendKindName(*e.fell_back_to)))
                                     : nlohmann::json(nullptr)}});
    }
  }
  *line = absl::StrJoin(texts, "; ");
  return out;
}

// The verdict the run's end state gives (AnalyzeRun adds what relaxed memory
// saw).
SimResult AnalyzeEndState(const SimRun& run) {
  const SimContext& ctx = run.ctx;
  SimResult result;
  result.policy = std::string(run.policy.name());
  result.trace_hash = ctx.trace.hash();
  result.schedule_steps = ctx.scheduler.steps();
  for (const RankRuntime& rt : run.ranks) result.rank_calls += rt.calls_made;
  for (int64_t c : ctx.clock) result.virtual_ns = std::max(result.virtual_ns, c);
  if (run.options.keep_trace) result.trace_events = ctx.trace.events();

  // Errors a policy swallowed: named by whatever the run ends in.
  std::string swallowed_line;
  const nlohmann::json swallowed = SwallowedErrors(run, &swallowed_line);
  if (ctx.finding) {
    result.verdict = ctx.finding->verdict;
    result.detector = ctx.finding->detector;
    result.summary = ctx.finding->summary;
    result.details = ctx.finding->details;
    result.details["observed_by_rank"] = ctx.finding->rank;
    result.details["virtual_time_ns"] = ctx.finding->at_ns;
    if (!swallowed.empty()) result.details["swallowed_errors"] = swallowed;
    // A silent failure that ranks choosing differently explains: say where
    // they first did (a tactic, an algorithm, a workspace).
    if (IsSilentFailure(result.verdict)) {
      std::string decision_line;
      nlohmann::json divergence = FirstDivergentDecision(run, &decision_line, true);
      if (!decision_line.empty()) {
        result.summary += absl::StrFormat("; first divergent decision: %s", decision_line);
        result.details["first_divergent_decision"] = std::move(divergence);
      }
    }
    return result;
  }
  const std::vector<int> blocked = ctx.scheduler.BlockedRanks();
  std::vector<int> dead;
  for (int r = 0; r < ctx.scheduler.num_ranks(); ++r) {
    if (ctx.scheduler.status(r) == RankStatus::kDead) dead.push_back(r);
  }
  if (blocked.empty() && !dead.empty()) {
    result.verdict = Verdict::kFailStop;
    result.detector = Detector::kDeadRank;
    result.summary =
        absl::StrFormat("rank%s %s died; every other rank finished, and the launcher stops the job",
                        dead.size() > 1 ? "s" : "", RankRanges(dead));
    result.details = {{"dead_ranks", dead}};
    if (!swallowed.empty()) result.details["swallowed_errors"] = swallowed;
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
  // What each blocked rank waits on, asked once: the propagation below and
  // the report both read it.
  std::vector<std::vector<int>> waits_on(blocked.size());
  for (size_t i = 0; i < blocked.size(); ++i) {
    const BlockReason& reason = ctx.scheduler.reason(blocked[i]);
    waits_on[i] = reason.waitable->WaitsOn(blocked[i], reason.detail);
  }
  // Waits a fault made hopeless: on a dead rank or on a write it destroyed,
  // directly or through ranks that are themselves stuck that way. Only those
  // are rescued, loudly, by the bounded waits and the watchdog.
  std::vector<bool> hopeless(static_cast<size_t>(ctx.scheduler.num_ranks()), false);
  for (int r : dead) hopeless[static_cast<size_t>(r)] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < blocked.size(); ++i) {
      const int r = blocked[i];
      if (hopeless[static_cast<size_t>(r)]) continue;
      const BlockReason& reason = ctx.scheduler.reason(r);
      bool stuck = reason.waitable->WaitsOnLostWrite(r, reason.detail);
      for (int target : waits_on[i]) stuck |= hopeless[static_cast<size_t>(target)];
      if (stuck) {
        hopeless[static_cast<size_t>(r)] = true;
        changed = true;
      }
    }
  }
  const bool all_hopeless = std::all_of(blocked.begin(), blocked.end(),
                                        [&](int r) { return hopeless[static_cast<size_t>(r)]; });
  std::vector<int> unbounded;
  // One entry per blocked rank, built in place: at thousands of blocked ranks
  // the report's time is these entries (docs/PERFORMANCE.md, "Hang report
  // latency").
  waits.get_ref<nlohmann::json::array_t&>().reserve(blocked.size());
  // A node and its edges take some 100 bytes.
  dot.reserve(dot.size() + 128 * blocked.size());
  for (size_t i = 0; i < blocked.size(); ++i) {
    const int r = blocked[i];
    const BlockReason& reason = ctx.scheduler.reason(r);
    std::string what = reason.waitable->DescribeWait(r, reason.detail);
    const bool kernel = reason.waitable->IsKernelWait();
    const int64_t fires =
        reason.since_ns +
        static_cast<int64_t>((kernel ? s.timeouts.kernel_wait_ms : s.timeouts.watchdog_ms) * 1e6);
    // A wait without a budget never fires (a policy that polls without bound).
    if (!reason.waitable->WaitIsBounded(r, reason.detail)) {
      unbounded.push_back(r);
    } else if (first_timeout < 0 || fires < first_timeout) {
      first_timeout = fires;
      first_timeout_rank = r;
      first_timeout_kind = kernel ? "the fused kernel's bounded wait" : "the NCCL watchdog";
    }
    const std::string node = absl::StrCat("r", r);
    absl::StrAppend(
        &dot, "  ", node, " [label=\"rank ", r, "\\n",
        what.find('"') == std::string::npos ? what : absl::StrReplaceAll(what, {{"\"", "'"}}),
        "\"];\n");
    for (int target : waits_on[i]) absl::StrAppend(&dot, "  ", node, " -> r", target, ";\n");
    nlohmann::json entry(nlohmann::json::value_t::object);
    auto& fields = entry.get_ref<nlohmann::json::object_t&>();
    // In key order, each after the last: no search.
    fields.emplace_hint(fields.end(), "rank", r);
    fields.emplace_hint(fields.end(), "since_ns", reason.since_ns);
    fields.emplace_hint(fields.end(), "waits_for", std::move(what));
    fields.emplace_hint(fields.end(), "waits_on", std::move(waits_on[i]));
    waits.push_back(std::move(entry));
  }
  for (int r : dead)
    dot += absl::StrFormat("  r%d [label=\"rank %d\\ndead\", style=dashed];\n", r, r);
  dot += "}\n";
  result.wait_for_dot = std::move(dot);
  result.detector = Detector::kDeadlock;
  // Only a wait that gives up rescues the job: with none among the blocked
  // ranks, a hopeless wait is a hang like any other.
  if (all_hopeless && first_timeout >= 0) {
    result.verdict = Verdict::kFailStop;
    result.summary = absl::StrFormat(
        "ranks %s wait for %s; %s of rank %d fires at %.3f ms virtual time and the job stops",
        RankRanges(blocked),
        dead.empty()
            ? std::string("writes an injected fault destroyed")
            : absl::StrFormat("dead rank%s %s", dead.size() > 1 ? "s" : "", RankRanges(dead)),
        first_timeout_kind, first_timeout_rank, static_cast<double>(first_timeout) / 1e6);
    // Moved, not copied: one entry per blocked rank.
    result.details = {{"blocked", std::move(waits)},
                      {"dead_ranks", dead},
                      {"fires",
                       {{"what", first_timeout_kind},
                        {"rank", first_timeout_rank},
                        {"virtual_time_ns", first_timeout}}}};
    if (!swallowed.empty()) result.details["swallowed_errors"] = swallowed;
    return result;
  }
  std::string decision_line;
  nlohmann::json divergence = FirstDivergentDecision(run, &decision_line);
  result.verdict = Verdict::kHang;
  const std::string unbounded_line =
      unbounded.empty()
          ? std::string()
          : absl::StrFormat("; rank%s %s poll%s without a bound", unbounded.size() > 1 ? "s" : "",
                            RankRanges(unbounded), unbounded.size() > 1 ? "" : "s");
  result.summary = absl::StrFormat(
      "ranks %s %s%s%s%s", RankRanges(blocked),
      all_hopeless
          ? absl::StrFormat("wait for %s and nothing ends the wait",
                            dead.empty()
                                ? std::string("writes an injected fault destroyed")
                                : absl::StrFormat("dead rank%s %s", dead.size() > 1 ? "s" : "",
                                                  RankRanges(dead)))
          : std::string("wait on each other with no way forward"),
      unbounded_line,
      decision_line.empty() ? "" : absl::StrFormat("; first divergent decision: %s", decision_line),
      swallowed_line.empty() ? "" : absl::StrFormat("; %s", swallowed_line));
  // Moved, not copied: one entry per blocked rank.
  result.details = {
      {"blocked", std::move(waits)},
      {"first_divergent_decision", std::move(divergence)},
      {"dead_ranks", dead},
      // null: no blocked rank's wait has a bound.
      {"would_fire", first_timeout < 0 ? nlohmann::json(nullptr)
                                       : nlohmann::json{{"what", first_timeout_kind},
                                                        {"rank", first_timeout_rank},
                                                        {"virtual_time_ns", first_timeout}}},
      {"swallowed_errors", swallowed},
      {"unbounded_waits", unbounded}};
  return result;
}

}  // namespace

SimResult AnalyzeRun(const SimRun& run) {
  SimResult result = AnalyzeEndState(run);
  if (run.ctx.relaxed != nullptr) result.relaxed_stores = run.ctx.relaxed->landed();
  result.posted_calls = run.ctx.posted_calls;
  // Under relaxed memory, a silent failure names the first store a load got
  // ahead of: the store that arrived late.
  if (run.ctx.relaxed != nullptr && IsSilentFailure(result.verdict) &&
      !run.ctx.relaxed->late_read().empty()) {
    result.summary += "; relaxed memory: " + run.ctx.relaxed->late_read();
    result.details["late_store"] = run.ctx.relaxed->late_read();
  }
  if (IsSilentFailure(result.verdict) && !run.exchange_note.empty()) {
    result.summary += "; " + run.exchange_note;
    result.details["exchange"] = run.exchange_note;
  }
  return result;
}

uint64_t CompactDecisionLogs(SimRun& run) {
  const ParallelLayout& layout = run.ctx.layout;
  struct Call {
    int64_t members = 0;  // records, one per rank unless `twice`
    int last_rank = -1;
    bool twice = false;  // a rank made two records (a fallback): kept
    bool alike = true;
    const DecisionRecord* first = nullptr;
  };
  size_t held = 0;
  for (const RankRuntime& rt : run.ranks) held += rt.calls.size();
  absl::flat_hash_map<GroupCallKey, Call> calls;
  calls.reserve(held / 2);
  // Per (object, group): the lowest, over the ranks that logged any call on
  // it, of the highest call each logged there.
  absl::flat_hash_map<std::pair<int32_t, uint32_t>, uint64_t> settled_below, latest;
  for (size_t r = 0; r < run.ranks.size(); ++r) {
    latest.clear();
    for (const CallLog& c : run.ranks[r].calls) {
      Call& call = calls[{c.object, c.record.group.value, c.record.seq}];
      call.twice |= call.last_rank == static_cast<int>(r);
      call.last_rank = static_cast<int>(r);
      ++call.members;
      if (call.first == nullptr) {
        call.first = &c.record;
      } else if (call.alike) {
        call.alike = Choice(c.record) == Choice(*call.first) && SameDecision(c.record, *call.first);
      }
      uint64_t& l = latest[{c.object, c.record.group.value}];
      l = std::max(l, c.record.seq);
    }
    for (const auto& [group, seq] : latest) {
      auto [it, fresh] = settled_below.try_emplace(group, seq);
      if (!fresh) it->second = std::min(it->second, seq);
    }
  }
  auto droppable = [&](const CallLog& c) {
    const Call& call = calls.at({c.object, c.record.group.value, c.record.seq});
    return call.alike && !call.twice && call.members == layout.GroupSize(c.record.group) &&
           c.record.seq < settled_below.at({c.object, c.record.group.value});
  };
  uint64_t kept = 0;
  for (RankRuntime& rt : run.ranks) {
    // Decide every record before moving any: `first` points into the logs.
    std::vector<bool> drop(rt.calls.size());
    for (size_t i = 0; i < rt.calls.size(); ++i) drop[i] = droppable(rt.calls[i]);
    size_t out = 0;
    for (size_t i = 0; i < rt.calls.size(); ++i) {
      if (drop[i]) continue;
      if (out != i) rt.calls[out] = std::move(rt.calls[i]);
      ++out;
    }
    // The capacity stays: it is what the rank logs between two compactions,
    // which the budget bounds, and the next records reuse it.
    rt.calls.resize(out);
    kept += out;
  }
  return kept;
}

}  // namespace lockstep
