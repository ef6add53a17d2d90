// The internals of one simulated run, shared by simulation.cc (set-up and
// analysis) and rank_program.cc (what each rank executes). Not a public API.

#ifndef LOCKSTEP_SIM_SIM_RUN_H_
#define LOCKSTEP_SIM_SIM_RUN_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "dispatch/group_coordinator.h"
#include "dispatch/policy.h"
#include "dispatch/stable_hash.h"
#include "dispatch/workspace.h"
#include "sim/memory/custom_allreduce_memory.h"
#include "sim/memory/data.h"
#include "sim/memory/nccl_comm.h"
#include "sim/memory/relaxed_visibility.h"
#include "sim/memory/sim_context.h"
#include "sim/memory/workspace_memory.h"
#include "sim/replica/group_wiring.h"
#include "sim/replica/replica_config.h"
#include "sim/replica/site.h"
#include "sim/sim_backends.h"
#include "sim/sim_result.h"

namespace lockstep {

// One dispatched call, as a rank logged it.
struct CallLog {
  int32_t object = 0;
  SiteRef site;
  DecisionRecord record;
  int64_t position = 0;  // among every record the rank made (kept or compacted away)
};

// The decision logs of a run's ranks, as one budget: when they hold `limit`
// records, `compact` drops the ones no report can name (CompactDecisionLogs)
// and sets the next limit. Keeps a long run's memory bounded by what is in
// flight, not by its length.
struct DecisionLogBudget {
  uint64_t held = 0;
  uint64_t limit = 0;  // 0: keep every record (a decision log was asked for)
  std::function<void()> compact;
};

// An error a rank's backend raised that the policy did not propagate: it
// fell back to another backend, or carried on as if the call had run.
struct SwallowedError {
  int64_t call = 0;  // the rank's dispatched-call index of the call that raised
  int32_t object = 0;
  SiteRef site;
  DecisionRecord record;  // the decision whose backend raised
  std::string error;
  // The backend the rank fell back to (nullopt: none; the call returned as if
  // it had run).
  std::optional<BackendKind> fell_back_to;
};

struct RankRuntime : CallObserver {
  CallPlace OnBackendCall(const DecisionRecord& record) override {
    // Run-ahead: a kernel other than NCCL's runs after the NCCL calls the
    // rank posted before it (a stream runs its work in order).
    if (record.backend != BackendKind::kNccl && drain_before_kernel) drain_before_kernel();
    // (What is usually not there is out of line: this runs in every
    // rank-call, and its frame saved registers for the rare paths.)
    if (keep_decisions || !raised_in_call.empty()) LogAndSettle(record);
    const CallPlace place = NextCall();
    ++calls_made;
    return place;
  }
  void OnBackendError(const DecisionRecord& record, const absl::Status& error) override {
    raised_in_call.push_back(SwallowedError{static_cast<int64_t>(calls_made) - 1, current_object,
                                            current_site, record, std::string(error.message()),
                                            std::nullopt});
  }
  // Around one dispatched call: `raised` is whether the call ended in an
  // error the rank raises (the policy propagated it).
  void BeginCall(int32_t object, const SiteRef& site) {
    current_object = object;
    current_site = site;
    raised_in_call.clear();
  }
  void EndCall(bool raised) {
    if (!raised_in_call.empty()) SettleRaised(raised);
  }
  // Where the rank's next dispatched call is (at `site`: the site of the call
  // it is preparing, else the last one it began).
  CallPlace NextCall() const { return NextCall(current_site); }
  CallPlace NextCall(const SiteRef& site) const {
    return CallPlace{static_cast<int64_t>(calls_made), step,
                     static_cast<int64_t>(calls_made - step_first_call), site};
  }
  // The rank's groups, backends and coordinators (sim/replica/group_wiring.h);
  // wiring.local is its raw state, which the votes read for every member.
  RankWiring wiring;
  // Set by the rank's host in a run-ahead run (SimContext::Stream): waits
  // until every call the rank posted has completed.
  std::function<void()> drain_before_kernel;
  // What the rank program is dispatching (set before each call).
  int32_t current_object = 0;
  SiteRef current_site;
  bool keep_decisions = true;

  std::vector<CallLog> calls;
  int64_t logged = 0;                       // records made, kept or not
  DecisionLogBudget* log_budget = nullptr;  // the run's (null: never compacted)
  uint64_t calls_made = 0;
  int step = 0;                  // the step the rank is in
  uint64_t step_first_call = 0;  // calls_made when it began
  // Errors its backends raised that its policy swallowed, the first
  // kMaxSwallowed of them, and how many there were.
  static constexpr size_t kMaxSwallowed = 16;
  std::vector<SwallowedError> swallowed;
  int64_t swallowed_count = 0;

 private:
  // OnBackendCall's decision log, and the errors of the call in flight the
  // policy swallowed by going on to this backend.
  ABSL_ATTRIBUTE_NOINLINE void LogAndSettle(const DecisionRecord& record) {
    if (keep_decisions) {
      calls.push_back(CallLog{current_object, current_site, record, logged++});
      if (log_budget != nullptr && log_budget->limit != 0 &&
          ++log_budget->held >= log_budget->limit) {
        log_budget->compact();
      }
    }
    // Another backend after an error in the same dispatched call: the policy
    // swallowed the error and fell back.
    for (SwallowedError& e : raised_in_call) {
      e.fell_back_to = record.backend;
      Swallowed(std::move(e));
    }
    raised_in_call.clear();
  }
  // EndCall's errors of the call: swallowed unless the call raised.
  ABSL_ATTRIBUTE_NOINLINE void SettleRaised(bool raised) {
    if (!raised) {
      for (SwallowedError& e : raised_in_call) Swallowed(std::move(e));
    }
    raised_in_call.clear();
  }
  void Swallowed(SwallowedError e) {
    ++swallowed_count;
    if (swallowed.size() < kMaxSwallowed) swallowed.push_back(std::move(e));
  }
  // Errors raised by the dispatched call in flight, not yet propagated or
  // swallowed.
  std::vector<SwallowedError> raised_in_call;
};

class SimRun {
 public:
  SimRun(const Scenario& scenario, const ParallelLayout& layout, const DispatchPolicy& policy,
         const SimOptions& options);
  // Ends the fibers of ranks still waiting before the state they use goes.
  ~SimRun() { ctx.scheduler.Shutdown(); }

  // Builds workspaces, communicators and every rank's coordinators.
  absl::Status Setup();
  // Runs the ranks until they finish or something is found.
  void Execute();
  // Turns the end state into a result.
  SimResult Analyze();

  SimContext ctx;
  // The stores in flight under `memory: relaxed` (ctx.relaxed); null otherwise.
  std::unique_ptr<RelaxedVisibility> relaxed;
  // The first host-level exchange that went wrong without raising (a rank
  // that skipped a workspace's set-up exchange or a graph registration,
  // graph inputs paired by position across different counts), as "what:
  // how": named in a silent failure's report.
  std::string exchange_note;
  const DispatchPolicy& policy;
  const SimOptions& options;
  ReplicaConfig replica;  // the serving configuration, resolved (Setup)
  WorkspaceTags tags;
  std::vector<RankRuntime> ranks;
  DecisionLogBudget log_budget;  // the ranks' decision logs (Setup)
  // The simulated resources the ranks' backends share, one per group instance
  // (built as the first member wires it).
  std::vector<std::unique_ptr<SimWorkspace>> workspaces;
  std::vector<std::vector<int32_t>> workspaces_of;  // per rank: its workspaces' indices
  std::vector<std::unique_ptr<SimComm>> comms;
  std::vector<std::unique_ptr<SimCustomAllReduce>> customs;
  SimMailbox mailbox;
  ReductionChecker checker;
  // Per rank: tokens added to what the workload says (a caller that passes
  // another shape on one rank; outside the dispatch contract).
  std::vector<int64_t> token_skew;
  // The element counts of the latest rows collective (`rows` x `hidden`),
  // shared by every member that posts the same ones: each member of a
  // reduce-scatter or gather holds the list for the whole group while it
  // waits, which copied per member is the square of the group's width.
  // `v`, or an equal list some rank still holds: the lists as long as a TP
  // group that every rank keeps while it waits (attention DP's batch plans
  // and row lists). Found by content, whatever the order ranks ask in
  // (pipeline stages and mutants that plan from local views interleave
  // different lists); a list is freed with its last holder.
  std::shared_ptr<const std::vector<int64_t>> Shared(std::vector<int64_t> v) {
    std::weak_ptr<const std::vector<int64_t>>& slot = shared_lists_[LaneDigest(v)];
    if (std::shared_ptr<const std::vector<int64_t>> kept = slot.lock(); kept && *kept == v) {
      return kept;
    }
    // (A digest collision replaces the entry: sharing saves memory, it does
    // not decide anything.)
    auto made = std::make_shared<const std::vector<int64_t>>(std::move(v));
    slot = made;
    if (shared_lists_.size() >= next_sweep_) {
      for (auto it = shared_lists_.begin(); it != shared_lists_.end();) {
        if (it->second.expired()) {
          shared_lists_.erase(it++);
        } else {
          ++it;
        }
      }
      next_sweep_ = std::max<size_t>(64, 2 * shared_lists_.size());
    }
    return made;
  }
  std::shared_ptr<const RowCounts> RowCountsOf(const std::vector<int64_t>& rows, int64_t hidden) {
    const bool same = last_row_counts_ != nullptr &&
                      last_row_counts_->counts.size() == rows.size() &&
                      std::equal(rows.begin(), rows.end(), last_row_counts_->counts.begin(),
                                 [&](int64_t r, int64_t c) { return r * hidden == c; });
    if (!same) {
      std::vector<int64_t> counts(rows.size());
      for (size_t m = 0; m < rows.size(); ++m) counts[m] = rows[m] * hidden;
      last_row_counts_ = std::make_shared<const RowCounts>(std::move(counts));
    }
    return last_row_counts_;
  }

 private:
  std::shared_ptr<const RowCounts> last_row_counts_;
  absl::flat_hash_map<uint64_t, std::weak_ptr<const std::vector<int64_t>>> shared_lists_;
  size_t next_sweep_ = 64;  // sweep expired entries when the map reaches this size
};

// The body of rank `rank`'s fiber: the scenario's forward steps.
void RunRankProgram(SimRun& run, int rank);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_SIM_RUN_H_
