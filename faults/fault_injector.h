// FaultInjector: the SimFaultPlan built from a list of declared faults (a
// scenario's `faults:`, or a swarm draw). Generic over the kinds: at each hook
// it applies the effect (faults/fault_kinds.h) of every fault whose kind acts
// at that stage and whose ranks and placement match. Every fault acts
// through the hosts' hooks: tags, bindings and local state at set-up; local
// state and delays at step boundaries; errors and deaths at the backend seam;
// input values; lost, late and uncleared stores in the protocol memory model.
//
//   absl::StatusOr<std::unique_ptr<FaultInjector>> plan =
//       FaultInjector::Create(scenario, layout, scenario.faults);
//   SimOptions options;
//   options.faults = plan->get();

#ifndef LOCKSTEP_FAULTS_FAULT_INJECTOR_H_
#define LOCKSTEP_FAULTS_FAULT_INJECTOR_H_

#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/group_layout.h"
#include "faults/fault_kinds.h"
#include "sim/runtime/fault_plan.h"
#include "sim/scenario/scenario.h"

namespace lockstep::faults {

class FaultInjector : public SimFaultPlan {
 public:
  // Validates every fault (ValidateFault) and fills its defaults
  // (WithDefaults).
  static absl::StatusOr<std::unique_ptr<FaultInjector>> Create(const Scenario& scenario,
                                                               const ParallelLayout& layout,
                                                               std::vector<FaultSpec> faults);

  const std::vector<FaultSpec>& faults() const { return faults_; }

  void AdjustTags(const ParallelLayout& layout, WorkspaceTags& tags) override;
  WorkspaceBinding BindWorkspaces(const ParallelLayout& layout, WorkspaceKind kind,
                                  GroupRole intended) override;
  void InitLocalState(int rank, RankLocalState& state) override;
  void AtStepStart(int rank, int step, RankLocalState& state) override;
  void AtCapture(int rank, bool capturing, RankLocalState& state) override;
  std::vector<int64_t> StragglerDelaysUs(int rank, int step) const override;
  bool KillsRank(int rank, const CallPlace& place) override;
  absl::Status BeforeBackendCall(int rank, const CallPlace& place,
                                 const DecisionRecord& record) override;
  InjectedInput InputFault(int rank, const CallPlace& place) override;
  bool ForcesFtz() const override;
  bool DropsPush(int rank, int target, uint64_t epoch) override;
  int DelaysPush(int rank, int target, uint64_t epoch) override;
  bool DropsClear(int rank, uint64_t epoch) override;
  int64_t UnrecordedGraphInputs(int rank) override;
  bool DropsFlag(int rank, int target, uint64_t epoch) override;

 private:
  struct Active {
    FaultSpec spec;
    const FaultKindInfo* kind = nullptr;
    int64_t first_call = -1;  // kCall: the first call its placement matched
    bool fired = false;       // one-shot memory faults: already struck
    // Placed by layer or site: per struck rank, the call where the placement
    // first matched (PlacedAt's `first`).
    std::map<int, int64_t> first_at_site;
    // `first` for PlacedAt at `place` on `rank`, noting `place` as the first
    // when the placement matches there for the first time.
    int64_t FirstAtSite(int rank, const CallPlace& place);
  };
  FaultInjector(const Scenario& scenario, std::vector<Active> faults);
  // The faults of `stage` that strike `rank`, in declaration order.
  template <class Fn>
  void ForEach(FaultStage stage, int rank, Fn&& fn);
  template <class Fn>
  void ForEach(FaultStage stage, int rank, Fn&& fn) const;

  const Scenario& scenario_;
  std::vector<FaultSpec> faults_;
  std::vector<Active> active_;
  // A capturing rank's local state before at_phase: capture faults changed it.
  std::map<int, RankLocalState> before_capture_;
};

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_FAULT_INJECTOR_H_
