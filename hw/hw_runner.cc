// lockstep hw: the run on this job's GPUs and the merge of every rank's part
// into one result on rank 0.

#include "hw/hw_runner.h"

#include <mpi.h>

#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "faults/fault_injector.h"
#include "faults/fault_kinds.h"
#include "hw/hw_plan.h"
#include "hw/hw_rank.h"
#include "hw/mpi_exchange.h"

namespace lockstep::hw {
namespace {

static_assert(std::is_trivially_copyable_v<DecisionRecord>,
              "decision records travel between ranks as bytes");
static_assert(std::is_trivially_copyable_v<TraceEvent>, "trace events travel as bytes");

// One rank's part of the result, as it travels to rank 0.
nlohmann::json RankPart(int rank, const std::optional<Finding>& finding, bool left) {
  return {{"rank", rank},
          {"timed_out", finding && finding->timed_out},
          {"at_ns", finding ? finding->at_ns : int64_t{0}},
          {"verdict", finding ? std::string(VerdictName(finding->verdict)) : "clean"},
          {"detector", finding ? std::string(DetectorOf(finding->detector).name) : ""},
          {"summary", finding ? finding->summary : std::string()},
          {"details", finding ? finding->details : nlohmann::json::object()},
          {"left", left}};
}

template <class T>
std::span<const uint8_t> BytesOf(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

template <class T>
std::vector<T> ValuesOf(const std::vector<uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// On rank 0: every rank's part merged into one result. The verdict is the
// most severe finding; its summary is the root cause among those (a raised
// error before a timeout, then the earliest); where two ranks took their last
// call on a group differently, the first differing input is named.
void Merge(const ParallelLayout& layout, const std::vector<nlohmann::json>& parts,
           const std::vector<std::vector<DecisionRecord>>& decisions, SimResult& result) {
  const int world = static_cast<int>(parts.size());
  int worst = -1;
  auto cause_before = [&](int a, int b) {
    const nlohmann::json& ja = parts[static_cast<size_t>(a)];
    const nlohmann::json& jb = parts[static_cast<size_t>(b)];
    if (ja["timed_out"].get<bool>() != jb["timed_out"].get<bool>()) {
      return !ja["timed_out"].get<bool>();
    }
    return ja["at_ns"].get<int64_t>() < jb["at_ns"].get<int64_t>();
  };
  for (int r = 0; r < world; ++r) {
    const absl::StatusOr<Verdict> v =
        ParseVerdict(parts[static_cast<size_t>(r)]["verdict"].get<std::string>());
    if (!v.ok() || *v == Verdict::kClean) continue;
    if (Severity(*v) > Severity(result.verdict) ||
        (Severity(*v) == Severity(result.verdict) && cause_before(r, worst))) {
      result.verdict = *v;
      worst = r;
    }
  }
  std::vector<int> stopped;
  for (int r = 0; r < world; ++r) {
    if (parts[static_cast<size_t>(r)]["left"].get<bool>()) stopped.push_back(r);
  }
  if (worst >= 0) {
    const nlohmann::json& part = parts[static_cast<size_t>(worst)];
    result.summary = part["summary"].get<std::string>();
    result.details = part["details"];
    for (const DetectorInfo& d : Detectors()) {
      if (d.name == part["detector"].get<std::string>()) result.detector = d.detector;
    }
  } else if (!stopped.empty()) {
    // A rank left and nobody noticed: its peers never needed it again.
    result.summary = absl::StrFormat("rank(s) %s left the job; no peer waited on them",
                                     absl::StrJoin(stopped, ","));
  } else {
    result.summary = "every rank finished; every reduction covered its expected ranks";
  }
  if (result.verdict == Verdict::kClean) return;
  const size_t objects = layout.objects().size();
  for (size_t o = 0; o < objects; ++o) {
    for (int a = 0; a < world; ++a) {
      const DecisionRecord& ra = decisions[static_cast<size_t>(a)][o];
      if (ra.seq == ~uint64_t{0}) continue;
      for (int b = a + 1; b < world; ++b) {
        const DecisionRecord& rb = decisions[static_cast<size_t>(b)][o];
        if (rb.seq != ra.seq || rb.group != ra.group ||
            DecisionFingerprint(ra) == DecisionFingerprint(rb)) {
          continue;
        }
        const std::vector<std::string> diff = DescribeDifferences(ra, rb, &layout);
        result.details["diverged"] = {
            {"group", layout.objects()[o].name},
            {"seq", ra.seq},
            {"ranks", {a, b}},
            {"backends",
             {std::string(BackendKindName(ra.backend)), std::string(BackendKindName(rb.backend))}},
            {"differences", diff}};
        result.summary += absl::StrFormat(
            " [ranks %d and %d decided %s call %d differently: %s vs %s; first differing "
            "input: %s]",
            a, b, layout.objects()[o].name, ra.seq, BackendKindName(ra.backend),
            BackendKindName(rb.backend), diff.empty() ? std::string("?") : diff.front());
        return;
      }
    }
  }
}

}  // namespace

bool HwCanInject(std::string_view kind) {
  const faults::FaultKindInfo* info = faults::FindFaultKind(kind);
  return info != nullptr && info->gpu_injectable;
}

absl::StatusOr<HwResult> RunOnHardware(const Scenario& scenario, const HwOptions& options,
                                       const PolicyRegistry& registry) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  if (layout->world_size() != world) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scenario %s needs %d ranks but the job has %d: run it as mpirun -np %d lockstep hw ...",
        scenario.name, layout->world_size(), world, layout->world_size()));
  }
  if (scenario.workload.data != DataMode::kProvenance) {
    return absl::InvalidArgumentError(
        "the hardware runner checks provenance data only (workload.data: provenance)");
  }
  if (!scenario.workload.cuda_graph_tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: workload.cuda_graph_tokens: CUDA graph capture and replay are simulated only; the "
        "hardware runner does not capture graphs yet (drop the key to run every step eagerly)",
        scenario.path.empty() ? scenario.name : scenario.path));
  }
  for (const FaultSpec& f : scenario.faults) {
    if (!HwCanInject(f.kind)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: fault '%s' acts inside the simulator's memory model and cannot be injected on "
          "GPUs; the hardware runner injects %s",
          scenario.path, f.line, f.kind, faults::GpuInjectableKindsText()));
    }
  }
  const std::string policy_name =
      options.policy.empty() ? scenario.dispatch.policy : options.policy;
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> policy = registry.Create(policy_name);
  if (!policy.ok()) return policy.status();
  std::unique_ptr<faults::FaultInjector> faults;
  if (!scenario.faults.empty()) {
    absl::StatusOr<std::unique_ptr<faults::FaultInjector>> injector =
        faults::FaultInjector::Create(scenario, *layout, scenario.faults);
    if (!injector.ok()) return injector.status();
    faults = std::move(*injector);
  }

  HwResult out;
  out.world = world;
  out.result.policy = policy_name;
  std::vector<TraceEvent> events;
  std::vector<DecisionRecord> decisions;
  std::optional<Finding> finding;
  bool left = false;
  {
    HwRank me(scenario, *layout, **policy, options, faults.get(), rank);
    absl::Status setup = me.Setup();
    // Every rank learns whether set-up worked everywhere before running.
    int ok = setup.ok() ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!setup.ok() || !all_ok) {
      me.set_abort_on_teardown(true);
      if (!setup.ok()) return setup;
      return absl::AbortedError("set-up failed on another rank (see its message)");
    }
    me.Run();
    events = me.events();
    out.decision_log = me.decision_log();
    decisions = me.last_decisions();
    finding = me.finding();
    out.sharing = me.sharing();
    left = me.left();
    // Every rank returns (bounded waits, watchdog); then all learn whether
    // any stopped, so that nobody waits on a peer to tear down.
    int stopped = me.Stopped() ? 1 : 0, any_stopped = 0;
    MPI_Allreduce(&stopped, &any_stopped, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    me.set_abort_on_teardown(any_stopped != 0);
  }

  // Every rank's part, calls and last decisions, on rank 0.
  const std::string part = RankPart(rank, finding, left).dump();
  const auto parts =
      GatherBytes(MPI_COMM_WORLD, {reinterpret_cast<const uint8_t*>(part.data()), part.size()}, 0);
  const auto all_events = GatherBytes(MPI_COMM_WORLD, BytesOf(events), 0);
  const auto all_decisions = GatherBytes(MPI_COMM_WORLD, BytesOf(decisions), 0);
  if (rank != 0) {
    if (finding) {
      out.result.verdict = finding->verdict;
      out.result.summary = finding->summary;
    }
    return out;
  }
  std::vector<nlohmann::json> per_rank;
  std::vector<std::vector<DecisionRecord>> decisions_by_rank;
  for (int r = 0; r < world; ++r) {
    const std::vector<uint8_t>& bytes = parts[static_cast<size_t>(r)];
    per_rank.push_back(nlohmann::json::parse(bytes.begin(), bytes.end()));
    decisions_by_rank.push_back(ValuesOf<DecisionRecord>(all_decisions[static_cast<size_t>(r)]));
    for (const TraceEvent& e : ValuesOf<TraceEvent>(all_events[static_cast<size_t>(r)])) {
      out.result.trace_events.push_back(e);
    }
  }
  Merge(*layout, per_rank, decisions_by_rank, out.result);
  out.result.details["ranks"] = per_rank;
  out.result.details["workspace_sharing"] = out.sharing;
  out.result.rank_calls = out.result.trace_events.size();
  return out;
}

}  // namespace lockstep::hw
