// The fault catalogue: every kind of fault lockstep injects, with the outcome
// the reference design must give for it (DESIGN §4). One table row per kind;
// adding a kind is adding a row and its hooks in fault_injector.cc.

#ifndef LOCKSTEP_FAULTS_FAULT_KINDS_H_
#define LOCKSTEP_FAULTS_FAULT_KINDS_H_

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "dispatch/group_layout.h"
#include "sim/scenario/scenario.h"
#include "sim/scenario/verdict.h"

namespace lockstep::faults {

enum class FaultCategory : uint8_t {
  kPredicateInput,  // rank-divergent raw state a predicate could read
  kGroupBinding,    // workspaces bound or tagged to other peers
  kKernel,          // the kernel or the hardware misbehaves
  kInit,            // initialisation fails on some ranks
};
std::string_view FaultCategoryName(FaultCategory category);

struct FaultKindInfo {
  std::string_view name;
  FaultCategory category;
  // What the reference design must give: kClean where it masks the fault,
  // kFailStop where it can only surface it (then clean is also acceptable
  // when the fault never fires, e.g. a call that never happens).
  Verdict outcome;
  std::string_view summary;  // one line: what is injected
  std::string_view why;      // why the reference gives `outcome`
  // Parameters the kind accepts besides kind/ranks/at_call/at_step.
  std::vector<std::string_view> params;
  // Whether the kind means anything on this layout (e.g. an equal-size group
  // with other peers exists). Swarm mode draws only applicable kinds.
  bool (*applies)(const Scenario& scenario, const ParallelLayout& layout);
  // Whether `ranks` must be given (else the injector picks rank 1 or 0).
  bool needs_ranks = false;
};

// Every kind, in catalogue order.
std::span<const FaultKindInfo> AllFaultKinds();

// The kind named `name`; null if none.
const FaultKindInfo* FindFaultKind(std::string_view name);

// Checks one declared fault against the catalogue: known kind (with a
// "did you mean"), known parameters, ranks inside the world, applicable to
// the layout. Messages name the scenario file and the fault's line.
absl::Status ValidateFault(const Scenario& scenario, const ParallelLayout& layout,
                           const FaultSpec& fault);

// A role whose groups have the same width as `role`'s but other peers, for
// binding faults; nullopt when the layout has none.
std::optional<GroupRole> EqualSizeOtherRole(const ParallelLayout& layout, GroupRole role);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_FAULT_KINDS_H_
