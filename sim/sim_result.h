// What one simulated run is given and gives back: SimOptions and SimResult,
// apart from Simulate() (simulation.h) so that the reports (sim/report/) and
// the run's internals (sim_run.h) read them without the function that calls
// them (docs/ARCHITECTURE.md, "Layers").

#ifndef LOCKSTEP_SIM_SIM_RESULT_H_
#define LOCKSTEP_SIM_SIM_RESULT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "sim/replica/trace.h"
#include "sim/scenario/finding.h"
#include "sim/scenario/verdict.h"

namespace lockstep {

class SimRun;
class SimFaultPlan;

struct SimOptions {
  uint64_t seed = 1;
  std::string policy;  // empty: the scenario's dispatch.policy
  std::string schedule = "random";
  bool exact_provenance = false;  // name contributors without a rerun (slower)
  bool keep_trace = true;         // keep events for the trace file
  bool keep_decisions = true;     // keep decision records (explains hangs)
  // Fill SimResult::decision_log (needs keep_decisions).
  bool keep_decision_log = false;
  // Decision records held before the run first drops those no report can
  // name (CompactDecisionLogs, sim/report/analysis.h); later limits double
  // what stayed. 0: the default, kMinDecisionLogCompaction. Tests set it low
  // to compact at every few calls.
  uint64_t compact_decisions_at = 0;
  // Ranks run ahead of the NCCL all-reduces they check where the run allows
  // it (no faults, sequential memory, provenance data: docs/SIMULATOR.md,
  // "Run-ahead"); false: every call is a scheduling point and blocks, as
  // before run-ahead (the trace hashes of that model).
  bool run_ahead = true;
  // The faults of the run (faults/ builds them from the scenario's list or a
  // swarm draw). Required when the scenario declares faults. Not owned.
  SimFaultPlan* faults = nullptr;
  // Called once the run is built, before any rank runs (tests reach into
  // sim_run.h through it).
  std::function<void(SimRun&)> customize;
};

struct SimResult {
  Verdict verdict = Verdict::kClean;
  // The detector that gave the verdict (sim/scenario/finding.h); none for clean.
  std::optional<Detector> detector;
  std::string summary;
  nlohmann::json details;
  std::string policy;
  uint64_t trace_hash = 0;
  uint64_t rank_calls = 0;  // dispatched all-reduces, all ranks together
  uint64_t schedule_steps = 0;
  int64_t virtual_ns = 0;    // latest rank clock
  bool exact_rerun = false;  // the verdict's details come from an exact-provenance rerun
  // The run fell back from run-ahead to the interleaved model
  // (SimContext::run_ahead_fallback): the result is the interleaved run's.
  bool interleaved_rerun = false;
  // All-reduces a rank posted and ran ahead of (run-ahead), all ranks
  // together; 0 when every call was interleaved.
  uint64_t posted_calls = 0;
  // Under `memory: relaxed`: the stores that reached their peer late (in
  // flight, then landed); 0 with immediate visibility.
  uint64_t relaxed_stores = 0;
  // Where SGLang 0.5.23 sends calls to a backend lockstep does not implement,
  // and what lockstep ran in its place (docs/FIDELITY.md); empty: none.
  std::vector<std::string> unmodelled;
  std::vector<TraceEvent> trace_events;
  std::string wait_for_dot;  // Graphviz DOT of the wait-for graph (hangs only)
  // With keep_decision_log: each rank's decision log (sim/report/decision_log.h),
  // its header first, then one entry per dispatched call.
  std::vector<std::vector<nlohmann::json>> decision_log;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SIM_RESULT_H_
