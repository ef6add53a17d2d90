#include "faults/fault_injector.h"

#include <algorithm>

namespace lockstep::faults {
namespace {

bool Strikes(const FaultSpec& f, int rank) {
  return std::find(f.ranks.begin(), f.ranks.end(), rank) != f.ranks.end();
}

}  // namespace

FaultInjector::FaultInjector(const Scenario& scenario, std::vector<Active> faults)
    : scenario_(scenario), active_(std::move(faults)) {
  for (const Active& a : active_) faults_.push_back(a.spec);
}

absl::StatusOr<std::unique_ptr<FaultInjector>> FaultInjector::Create(
    const Scenario& scenario, const ParallelLayout& layout, std::vector<FaultSpec> faults) {
  std::vector<Active> active;
  for (FaultSpec& f : faults) {
    if (absl::Status s = ValidateFault(scenario, layout, f); !s.ok()) return s;
    const FaultKindInfo* kind = FindFaultKind(f.kind);
    Active a;
    a.spec = WithDefaults(std::move(f), layout);
    a.kind = kind;
    active.push_back(std::move(a));
  }
  return std::unique_ptr<FaultInjector>(new FaultInjector(scenario, std::move(active)));
}

int64_t FaultInjector::Active::FirstAtSite(int rank, const CallPlace& place) {
  if (!PlacedBySite(spec)) return -1;
  const auto it = first_at_site.find(rank);
  if (it != first_at_site.end()) return it->second;
  if (!AtPlacedSite(spec, place)) return -1;
  first_at_site[rank] = place.call;
  return place.call;
}

template <class Fn>
void FaultInjector::ForEach(FaultStage stage, int rank, Fn&& fn) {
  for (Active& a : active_) {
    if (a.kind->stage == stage && (rank < 0 || Strikes(a.spec, rank))) fn(a);
  }
}

template <class Fn>
void FaultInjector::ForEach(FaultStage stage, int rank, Fn&& fn) const {
  for (const Active& a : active_) {
    if (a.kind->stage == stage && (rank < 0 || Strikes(a.spec, rank))) fn(a);
  }
}

void FaultInjector::AdjustTags(const ParallelLayout& layout, WorkspaceTags& tags) {
  ForEach(FaultStage::kSetUp, -1, [&](const Active& a) {
    if (a.kind->effect.tags != nullptr) a.kind->effect.tags(layout, tags);
  });
}

WorkspaceBinding FaultInjector::BindWorkspaces(const ParallelLayout& layout, WorkspaceKind kind,
                                               GroupRole intended) {
  WorkspaceBinding binding{intended, 0};
  for (const Active& a : active_) {
    if (a.kind->stage != FaultStage::kSetUp || a.kind->effect.bind == nullptr) continue;
    if (a.kind->effect.bind(a.spec, scenario_, layout, kind, intended, binding)) break;
  }
  return binding;
}

void FaultInjector::InitLocalState(int rank, RankLocalState& state) {
  for (const Active& a : active_) {
    const bool local =
        a.kind->stage == FaultStage::kInit || a.kind->stage == FaultStage::kLocalState;
    if (local && a.spec.at_step < 0 && a.spec.at_phase.empty() && Strikes(a.spec, rank)) {
      a.kind->effect.local(a.spec, scenario_, state);
    }
  }
}

void FaultInjector::AtStepStart(int rank, int step, RankLocalState& state) {
  ForEach(FaultStage::kLocalState, rank, [&](const Active& a) {
    if (a.spec.at_step == step) a.kind->effect.local(a.spec, scenario_, state);
  });
}

void FaultInjector::AtCapture(int rank, bool capturing, RankLocalState& state) {
  if (!capturing) {
    if (const auto it = before_capture_.find(rank); it != before_capture_.end()) {
      state = it->second;
      before_capture_.erase(it);
    }
    return;
  }
  ForEach(FaultStage::kLocalState, rank, [&](const Active& a) {
    if (a.spec.at_phase != CallPhaseName(CallPhase::kCapture)) return;
    before_capture_.try_emplace(rank, state);
    a.kind->effect.local(a.spec, scenario_, state);
  });
}

std::vector<int64_t> FaultInjector::StragglerDelaysUs(int rank, int step) const {
  std::vector<int64_t> delays;
  ForEach(FaultStage::kStep, rank, [&](const Active& a) {
    if (a.spec.at_step < 0 || a.spec.at_step == step) {
      delays.push_back(a.kind->effect.delay_us(a.spec));
    }
  });
  return delays;
}

bool FaultInjector::KillsRank(int rank, const CallPlace& place) {
  bool kills = false;
  ForEach(FaultStage::kCall, rank, [&](Active& a) {
    if (a.kind->effect.kills) kills |= PlacedAt(a.spec, place, a.FirstAtSite(rank, place));
  });
  return kills;
}

absl::Status FaultInjector::BeforeBackendCall(int rank, const CallPlace& place,
                                              const DecisionRecord&) {
  absl::Status error = absl::OkStatus();
  ForEach(FaultStage::kCall, rank, [&](Active& a) {
    if (!error.ok() || a.kind->effect.error == nullptr) return;
    const int64_t first = a.FirstAtSite(rank, place);
    const bool strikes = a.kind->effect.sticky ? PlacedAtOrAfter(a.spec, place, first)
                                               : PlacedAt(a.spec, place, first);
    if (!strikes) return;
    if (a.first_call < 0) a.first_call = place.call;
    error = a.kind->effect.error(a.spec, rank, place.call, a.first_call);
  });
  return error;
}

InjectedInput FaultInjector::InputFault(int rank, const CallPlace& place) {
  InjectedInput in;
  ForEach(FaultStage::kInput, rank, [&](Active& a) {
    if (!PlacedAtOrAfter(a.spec, place, a.FirstAtSite(rank, place))) return;
    in.flags |= a.kind->effect.input_flags;
    // Placed on rows: the first such fault's rows (ValidateFault keeps one
    // placement per kind; two input faults on rows share the first's).
    if (a.spec.params.count("row") != 0 && in.rows == 0) {
      in.first_row = ParamOr(a.spec, "row", 0);
      in.rows = ParamOr(a.spec, "rows", 1);
    }
  });
  return in;
}

bool FaultInjector::ForcesFtz() const {
  return std::any_of(active_.begin(), active_.end(),
                     [](const Active& a) { return a.kind->effect.forces_ftz; });
}

bool FaultInjector::DropsPush(int rank, int, uint64_t epoch) {
  bool drops = false;
  ForEach(FaultStage::kMemory, rank, [&](Active& a) {
    if (drops || a.fired || a.kind->effect.drops_push == nullptr) return;
    if (a.kind->effect.drops_push(a.spec, epoch)) drops = a.fired = true;
  });
  return drops;
}

bool FaultInjector::DropsFlag(int rank, int target, uint64_t epoch) {
  return DropsPush(rank, target, epoch);
}

int FaultInjector::DelaysPush(int rank, int, uint64_t) {
  int steps = 0;
  ForEach(FaultStage::kMemory, rank, [&](const Active& a) {
    if (steps == 0 && a.kind->effect.delays_push != nullptr) {
      steps = a.kind->effect.delays_push(a.spec);
    }
  });
  return steps;
}

bool FaultInjector::DropsClear(int rank, uint64_t epoch) {
  bool drops = false;
  ForEach(FaultStage::kMemory, rank, [&](const Active& a) {
    if (a.kind->effect.drops_clear != nullptr) drops |= a.kind->effect.drops_clear(a.spec, epoch);
  });
  return drops;
}

int64_t FaultInjector::UnrecordedGraphInputs(int rank) {
  int64_t count = 0;
  ForEach(FaultStage::kMemory, rank, [&](const Active& a) {
    if (a.kind->effect.unrecorded_graph_inputs != nullptr) {
      count = std::max(count, a.kind->effect.unrecorded_graph_inputs(a.spec));
    }
  });
  return count;
}

}  // namespace lockstep::faults
