// The fault catalogue: every kind of fault lockstep injects, one table row
// each (AllFaultKinds()). A row says what the kind injects, the outcome the
// reference design must give for it (docs/FAULTS.md), when and where it acts
// (its stage), the placement keys and parameters it honours, whether GPUs can
// inject it, how swarm mode draws it, and its effect: the function the
// injector (faults/fault_injector.h) calls at the kind's stage. Adding a kind
// is adding a row and its effect function; everything else (validation,
// defaults, the hardware runner's admission, swarm draws, `lockstep faults`)
// reads the table.
//
//   const FaultKindInfo* kind = FindFaultKind("kernel_launch_failure");
//   kind->stage == FaultStage::kCall;           // fires at the backend seam
//   kind->Honours(FaultKey::kAtStep);           // "at_step: 3" fires at step 3
//   absl::Status s = ValidateFault(scenario, layout, spec);  // file:line: key

#ifndef LOCKSTEP_FAULTS_FAULT_KINDS_H_
#define LOCKSTEP_FAULTS_FAULT_KINDS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "dispatch/group_layout.h"
#include "dispatch/rank_local_state.h"
#include "dispatch/workspace.h"
#include "sim/replica/replica_faults.h"
#include "sim/runtime/rng.h"
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

// When and where a kind acts: the hook through which its effect reaches a run.
enum class FaultStage : uint8_t {
  kSetUp,       // group tags and workspace bindings, before any vote
  kInit,        // the rank's raw local state at set-up only (allocation, import)
  kLocalState,  // the rank's raw local state: from set-up, or from `at_step` on
  kStep,        // at the start of steps (a straggler)
  kCall,        // at the backend seam: one dispatched call (or every one from it)
  kInput,       // the values of the rank's inputs (from a call or step on)
  kMemory,      // inside the protocol memory model (the simulator only)
};
std::string_view FaultStageName(FaultStage stage);

// The placement keys of a fault entry besides `kind` and `ranks`. A kind
// honours some of them (FaultKindInfo::keys); a key it does not honour is
// refused at parse time with the file, line and key.
enum class FaultKey : uint8_t {
  kAtCall = 1,   // the rank's n-th dispatched all-reduce (0-based)
  kAtStep = 2,   // the n-th forward step (0-based)
  kAtLayer = 3,  // the n-th layer of the model (0-based)
  kAtSite = 4,   // a call-site kind (SiteKindName: attn_out, moe, embedding, ...)
  kAtPhase = 5,  // eager, capture or replay (CallPhaseName; workload.cuda_graph_tokens)
};
std::string_view FaultKeyName(FaultKey key);  // "at_call", "at_step", ..., "at_phase"

// One numeric or named parameter of a kind.
struct FaultParam {
  std::string_view name;
  std::string_view help;  // what it means and its default
  int64_t max = 0;        // a numeric parameter's largest value (0: the common bound)
};

// Whether `f` is placed by layer or site (at_layer, at_site): it then
// strikes each of its ranks at the first call there (in at_step's step when
// given), and a host keeps, per rank, the call where that was (`first`).
bool PlacedBySite(const FaultSpec& f);
// Whether the call at `place` is at f's step, layer and site (each when
// given).
bool AtPlacedSite(const FaultSpec& f, const CallPlace& place);
// Whether the call at `place` is where `f` is placed: its at_call-th call of
// the run, or with at_step, its at_call-th call (default the first) of that
// step; placed by site, the first call at its step, layer and site (`first`:
// that call's index on this rank once seen, else -1).
bool PlacedAt(const FaultSpec& f, const CallPlace& place, int64_t first = -1);
// Whether `place` is at or after where `f` is placed (no placement: always).
bool PlacedAtOrAfter(const FaultSpec& f, const CallPlace& place, int64_t first = -1);

// A kind's effect, one member per stage (the row fills the one of its
// stage). Every function reads its own parameters and placement from `f`.
struct FaultEffect {
  // kSetUp: the workspace tags, or the role a workspace kind rendezvouses on
  // (true: `binding` was changed).
  void (*tags)(const ParallelLayout& layout, WorkspaceTags& tags) = nullptr;
  bool (*bind)(const FaultSpec& f, const Scenario& s, const ParallelLayout& layout,
               WorkspaceKind kind, GroupRole intended, WorkspaceBinding& binding) = nullptr;
  // kInit, kLocalState: the rank's raw local state.
  void (*local)(const FaultSpec& f, const Scenario& s, RankLocalState& state) = nullptr;
  // kStep: the delay (µs) added to the rank's step.
  int64_t (*delay_us)(const FaultSpec& f) = nullptr;
  // kCall: whether the rank dies before the call, or the error its backend
  // raises instead of running (OK: none). `first` is the first call the
  // fault's placement matched (-1 before it matched).
  bool kills = false;
  absl::Status (*error)(const FaultSpec& f, int rank, int64_t call, int64_t first) = nullptr;
  bool sticky = false;  // the error stays from the first matching call on
  // kInput: ValueFlag bits injected into the rank's inputs.
  uint8_t input_flags = 0;
  bool forces_ftz = false;
  // kMemory (`epoch`: the workspace call, 1-based): a push or barrier flag
  // that never lands (one-shot), one that lands `steps` scheduling steps
  // late, a clear that does not take.
  bool (*drops_push)(const FaultSpec& f, uint64_t epoch) = nullptr;
  int (*delays_push)(const FaultSpec& f) = nullptr;
  bool (*drops_clear)(const FaultSpec& f, uint64_t epoch) = nullptr;
  // kMemory, CUDA graphs: how many of the rank's captured custom all-reduce
  // inputs, from its first, are never recorded for registration.
  int64_t (*unrecorded_graph_inputs)(const FaultSpec& f) = nullptr;
};

struct FaultKindInfo {
  std::string_view name;
  FaultCategory category;
  // What the reference design must give: kClean where it masks the fault,
  // kFailStop where it can only surface it (then clean is also acceptable
  // when the fault never fires, e.g. a call that never happens).
  Verdict outcome;
  std::string_view summary;  // one line: what is injected
  std::string_view why;      // why the reference gives `outcome`
  FaultStage stage;
  std::vector<FaultKey> keys;      // placement keys honoured
  std::vector<FaultParam> params;  // parameters accepted
  // Whether the hardware runner can inject it (it acts outside the
  // simulator's memory model and input values).
  bool gpu_injectable;
  // Whether the kind means anything on this layout (e.g. an equal-size group
  // with other peers exists). Swarm mode draws only applicable kinds.
  bool (*applies)(const Scenario& scenario, const ParallelLayout& layout);
  // Swarm mode: the placement and parameters of one drawn fault (its kind
  // and rank already set); calls_per_rank estimates the run's calls.
  void (*draw)(const Scenario& scenario, int64_t calls_per_rank, Rng& rng, FaultSpec& f);
  FaultEffect effect;

  bool Honours(FaultKey key) const;
};

// Every kind, in catalogue order.
std::span<const FaultKindInfo> AllFaultKinds();

// The kind named `name`; null if none.
const FaultKindInfo* FindFaultKind(std::string_view name);

// The outcome the reference design must give for `f` in `scenario`: its
// kind's, except that a delay (a straggler) of at least half the smallest
// wait budget (timeouts.kernel_wait_ms, watchdog_ms) may outlast a peer's
// bounded wait or watchdog, which then ends the call: fail_stop (clean
// still acceptable when no wait runs out). Half: a late rank may carry
// lateness it already had. kClean for an unknown kind.
Verdict FaultOutcome(const FaultSpec& f, const Scenario& scenario);

// "local-state, tagging, binding, rank_killed, ... faults": the kinds the
// hardware runner injects, for messages.
std::string GpuInjectableKindsText();

// Checks one declared fault against the catalogue: known kind (with a
// "did you mean"), placement keys it honours, known parameters with valid
// values, ranks inside the world, applicable to the layout, placed inside
// the run. Messages name the scenario file, the fault's line and the key.
absl::Status ValidateFault(const Scenario& scenario, const ParallelLayout& layout,
                           const FaultSpec& fault);

// The fault with its defaults filled in (ranks: rank 1, or 0 in a one-rank
// world; call faults without a placement: call 3).
FaultSpec WithDefaults(FaultSpec fault, const ParallelLayout& layout);

// A numeric parameter of `f`, or `fallback` when absent.
int64_t ParamOr(const FaultSpec& f, std::string_view name, int64_t fallback);

// A role whose groups have the same width as `role`'s but other peers, for
// binding faults; nullopt when the layout has none.
std::optional<GroupRole> EqualSizeOtherRole(const ParallelLayout& layout, GroupRole role);

}  // namespace lockstep::faults

#endif  // LOCKSTEP_FAULTS_FAULT_KINDS_H_
