// FaultInjector: the SimFaultPlan built from a list of declared faults (a
// scenario's `faults:`, or a swarm draw). Every fault acts through the
// simulator's hooks: rank-local state, tags and bindings at set-up; errors,
// deaths and delays at the seam; lost, late and uncleared stores in the
// protocol memory model.

#ifndef LOCKSTEP_FAULTS_FAULT_INJECTOR_H_
#define LOCKSTEP_FAULTS_FAULT_INJECTOR_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/group_layout.h"
#include "faults/fault_kinds.h"
#include "sim/runtime/fault_plan.h"
#include "sim/scenario/scenario.h"

namespace lockstep::faults {

class FaultInjector : public SimFaultPlan {
 public:
  // Validates every fault (ValidateFault) and resolves defaults: a fault
  // without ranks targets rank 1 (rank 0 in a one-rank world); kernel faults
  // without at_call fire at the rank's call 3; parameters get the defaults
  // documented in docs/FAULTS.md.
  static absl::StatusOr<std::unique_ptr<FaultInjector>> Create(const Scenario& scenario,
                                                               const ParallelLayout& layout,
                                                               std::vector<FaultSpec> faults);

  const std::vector<FaultSpec>& faults() const { return faults_; }

  void AdjustTags(const ParallelLayout& layout, WorkspaceTags& tags) override;
  Binding BindWorkspaces(const ParallelLayout& layout, WorkspaceKind kind,
                         GroupRole intended) override;
  void InitLocalState(int rank, RankLocalState& state) override;
  bool KillsRank(int rank, int64_t call) override;
  void OnStep(SimRun& run, int rank, int step) override;
  absl::Status BeforeBackendCall(int rank, int64_t call, const DecisionRecord& record) override;
  uint8_t InputFlags(int rank, int64_t call) override;
  bool ForcesFtz() const override;
  bool DropsPush(int rank, int target, uint64_t epoch) override;
  int DelaysPush(int rank, int target, uint64_t epoch) override;
  bool DropsClear(int rank, uint64_t epoch) override;
  bool DropsFlag(int rank, int target, uint64_t epoch) override;

  // For hosts other than the simulator (the hardware runner): the local-state
  // faults that start at `step` on `rank`, applied to `state`; and the delay
  // (µs) a straggler fault adds to `rank`'s `step`.
  void StepLocalState(int rank, int step, RankLocalState& state) const;
  int64_t StragglerDelayUs(int rank, int step) const;

 private:
  FaultInjector(const Scenario& scenario, std::vector<FaultSpec> faults);
  // Faults of `kind` that target `rank`.
  std::vector<const FaultSpec*> For(std::string_view kind, int rank) const;
  bool Has(std::string_view kind) const;
  int64_t Param(const FaultSpec& f, std::string_view name, int64_t fallback) const;
  // Applies a rank-local-state fault to `state`.
  void ApplyLocal(const FaultSpec& f, RankLocalState& state) const;

  const Scenario& scenario_;
  std::vector<FaultSpec> faults_;
  std::set<const FaultSpec*> fired_;  // one-shot faults that already fired
};

// Whether `kind`'s fault changes rank-local state (applied at set-up, or at
// the start of `at_step`).
bool IsLocalStateFault(std::string_view kind);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_FAULT_INJECTOR_H_
