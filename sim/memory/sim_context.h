// State shared by every part of one simulated run: the scenario, the layout,
// the hardware model, the scheduler, data stores, virtual clocks, the trace,
// and the first finding (which ends the run). It lives with the simulated
// memory that works on it (communicators block ranks through its scheduler,
// workspaces read its clocks, the checks keep its contributor sets), above
// the fibers and scheduler of sim/runtime/ (docs/ARCHITECTURE.md).

#ifndef LOCKSTEP_SIM_MEMORY_SIM_CONTEXT_H_
#define LOCKSTEP_SIM_MEMORY_SIM_CONTEXT_H_

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dispatch/group_layout.h"
#include "kernels/protocol/element.h"
#include "nlohmann/json.hpp"
#include "sim/memory/value.h"
#include "sim/replica/trace.h"
#include "sim/runtime/fault_plan.h"
#include "sim/runtime/scheduler.h"
#include "sim/scenario/finding.h"
#include "sim/scenario/hardware_model.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/verdict.h"

namespace lockstep {

class RelaxedVisibility;
class SimComm;

// The elements numeric data carries: all of them (`data: numeric`), or 8 in
// every workload.sample_stride (`data: sampled`). The default stride is the
// largest power of two not above hidden, within [8, 8192]: every range of a
// row's length keeps 8 or more elements (a rank's rows, a row collective's
// shares and a fault's rows all keep some), and at hidden 8192 the cost is
// near provenance mode's (bench/sim_bench.cc, BM_NumericVersusSymbolic: each
// kept element costs some 16 passes per rank and call).
inline NumericSampler SamplerFor(const Scenario& s) {
  if (s.workload.data != DataMode::kSampled) return NumericSampler{};
  int64_t stride = s.workload.sample_stride;
  if (stride == 0) {
    stride = static_cast<int64_t>(
        std::bit_floor(static_cast<uint64_t>(std::clamp<int64_t>(s.model.hidden, 8, 8192))));
  }
  return NumericSampler{std::countr_zero(static_cast<uint64_t>(stride)), 8};
}

struct SimContext {
  SimContext(const Scenario& s, const ParallelLayout& l, uint64_t run_seed, bool exact_provenance,
             std::unique_ptr<SchedulePolicy> schedule, bool keep_trace)
      : scenario(s),
        layout(l),
        hardware(s.hardware),
        scheduler(l.world_size(), run_seed, std::move(schedule)),
        seed(run_seed),
        exact(exact_provenance),
        numeric_mode(s.workload.data != DataMode::kProvenance),
        sampler(SamplerFor(s)),
        elem(static_cast<protocol::Elem>(s.dispatch.dtype)),
        latest_inputs(numeric_mode ? static_cast<size_t>(l.world_size()) : 0),
        clock(static_cast<size_t>(l.world_size()), 0),
        trace(keep_trace) {}

  int64_t& Clock(int rank) { return clock[static_cast<size_t>(rank)]; }
  void AdvanceTo(int rank, int64_t t) {
    if (t > Clock(rank)) Clock(rank) = t;
  }

  // Records `f` if nothing was found yet, and stops the run.
  void Report(Finding f) {
    if (!finding && !scheduler.shutting_down()) {
      finding = std::move(f);
      scheduler.Stop();
    }
  }
  bool stopped() const {
    return finding.has_value() || scheduler.shutting_down() || run_ahead_fallback;
  }

  const Scenario& scenario;
  const ParallelLayout& layout;
  HardwareModel hardware;
  Scheduler scheduler;
  uint64_t seed;
  bool exact;
  bool numeric_mode;  // numeric or sampled data
  NumericSampler sampler;
  protocol::Elem elem;
  ContributorSets sets;
  NumericStore numeric;
  // What a fault injected into (rank, instance)'s numeric input, so that the
  // double-precision reference sums what the ranks really sent.
  std::map<std::pair<int, uint64_t>, InputInjection> injected_inputs;
  // Numeric mode: each rank's latest input array (MakeInput), which the
  // checks' reference reuses instead of regenerating it (numeric mode
  // regenerated every contribution of every call once more).
  struct LatestInput {
    uint64_t instance = 0;
    int64_t elems = 0;  // the input's length (its array holds the kept ones)
    NumericArray bits;
  };
  std::vector<LatestInput> latest_inputs;
  std::vector<int64_t> clock;
  Trace trace;
  std::optional<Finding> finding;
  // Set when a provenance check failed in fingerprint mode: the run is
  // repeated in exact mode to name the contributors.
  bool needs_exact_rerun = false;
  // Run-ahead (docs/SIMULATOR.md, "Run-ahead"): a rank posts an NCCL
  // all-reduce it checks and goes on, as a serving host enqueues on its
  // stream, and waits for what it posted only where a host synchronises.
  // One entry per rank; empty: every call is interleaved (faults, relaxed
  // memory, numeric data, or SimOptions::run_ahead off).
  struct Stream {
    // Posted calls a rank may have outstanding before it waits for them (a
    // host's stream is not endless either; each holds its input and check).
    static constexpr int32_t kMaxPending = 8;
    SimComm* comm = nullptr;  // where its posted all-reduces are (one communicator at a time)
    int32_t pending = 0;      // posted and not completed
    bool draining = false;    // blocked until `pending` is 0
    // What the completed ones kept the rank waiting that its clock has not
    // taken yet: its clock runs on from where it posted, and its real time
    // is the clock plus this (added when it drains).
    int64_t lag_ns = 0;
  };
  std::vector<Stream> streams;
  uint64_t posted_calls = 0;  // all-reduces posted this way, all ranks together
  // Set when a run-ahead run met what only the interleaved model reports as
  // it should (a watchdog that fires on a posted call): the run stops, and
  // Simulate runs the seed again with every call interleaved.
  bool run_ahead_fallback = false;
  void FallBackToInterleaved() {
    run_ahead_fallback = true;
    scheduler.Stop();
  }
  // The run's faults (null: none).
  SimFaultPlan* faults = nullptr;
  // Under `memory: relaxed`, the stores in flight to peers
  // (sim/memory/relaxed_visibility.h); null: every store is visible at once.
  RelaxedVisibility* relaxed = nullptr;

  // Work that happens later (a late write landing): run after `steps` more
  // scheduling steps, or as soon as no rank can run. Only a run with faults
  // defers work: SimRun installs the scheduler's hook that runs it only then.
  void Defer(uint64_t steps, std::function<void()> action) {
    assert(faults != nullptr && "deferred work runs only in a run with faults (SimRun::Setup)");
    deferred.push_back({scheduler.steps() + steps, std::move(action)});
  }
  // Runs what is due (everything when `idle`); true if anything ran.
  bool RunDeferred(uint64_t step, bool idle) {
    bool ran = false;
    for (size_t i = 0; i < deferred.size();) {
      if (idle || deferred[i].due <= step) {
        auto action = std::move(deferred[i].action);
        deferred.erase(deferred.begin() + static_cast<std::ptrdiff_t>(i));
        action();
        ran = true;
      } else {
        ++i;
      }
    }
    return ran;
  }
  struct DeferredAction {
    uint64_t due;
    std::function<void()> action;
  };
  std::vector<DeferredAction> deferred;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_SIM_CONTEXT_H_
