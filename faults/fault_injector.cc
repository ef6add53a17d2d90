#include "faults/fault_injector.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "sim/sim_run.h"
#include "sim/memory/value.h"

namespace lockstep::faults {
namespace {

constexpr int64_t kDefaultKernelCall = 3;

bool IsKernelCallFault(std::string_view kind) {
  return kind == "kernel_launch_failure" || kind == "illegal_address" || kind == "rank_killed";
}

}  // namespace

bool IsLocalStateFault(std::string_view kind) {
  for (std::string_view k :
       {"workspace_initialized_view", "capacity_view", "dtype_seen", "token_count_view",
        "contiguity_view", "backend_flag", "library_unavailable", "tracing_state",
        "graph_capture_state", "sm_count_divergence", "fp32_acc_env", "workspace_alloc_failure"}) {
    if (k == kind) return true;
  }
  return false;
}

FaultInjector::FaultInjector(const Scenario& scenario, std::vector<FaultSpec> faults)
    : scenario_(scenario), faults_(std::move(faults)) {}

absl::StatusOr<std::unique_ptr<FaultInjector>> FaultInjector::Create(
    const Scenario& scenario, const ParallelLayout& layout, std::vector<FaultSpec> faults) {
  for (FaultSpec& f : faults) {
    if (absl::Status s = ValidateFault(scenario, layout, f); !s.ok()) return s;
    if (f.ranks.empty()) f.ranks.push_back(layout.world_size() > 1 ? 1 : 0);
    if (f.at_call < 0 && IsKernelCallFault(f.kind)) f.at_call = kDefaultKernelCall;
    const bool init_time = f.kind == "workspace_alloc_failure" || f.kind == "library_unavailable";
    if (init_time && f.at_step >= 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s:%d: faults: '%s' happens at initialisation; it takes no at_step",
                          scenario.path.empty() ? scenario.name : scenario.path, f.line, f.kind));
    }
  }
  return std::unique_ptr<FaultInjector>(new FaultInjector(scenario, std::move(faults)));
}

std::vector<const FaultSpec*> FaultInjector::For(std::string_view kind, int rank) const {
  std::vector<const FaultSpec*> out;
  for (const FaultSpec& f : faults_) {
    if (f.kind == kind && std::find(f.ranks.begin(), f.ranks.end(), rank) != f.ranks.end()) {
      out.push_back(&f);
    }
  }
  return out;
}

bool FaultInjector::Has(std::string_view kind) const {
  return std::any_of(faults_.begin(), faults_.end(),
                     [&](const FaultSpec& f) { return f.kind == kind; });
}

int64_t FaultInjector::Param(const FaultSpec& f, std::string_view name, int64_t fallback) const {
  auto it = f.params.find(std::string(name));
  int64_t v = fallback;
  if (it != f.params.end() && absl::SimpleAtoi(it->second, &v)) return v;
  return fallback;
}

void FaultInjector::AdjustTags(const ParallelLayout& layout, WorkspaceTags& tags) {
  if (Has("both_moe_groups_tagged")) {
    tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeEp))] =
        WorkspaceKind::kMoe;
    tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kMoeTp))] =
        WorkspaceKind::kMoe;
  }
  if (Has("tp_group_tagged")) {
    tags.by_object[static_cast<size_t>(layout.ObjectIndex(GroupRole::kTp))] =
        WorkspaceKind::kAttnTp;
  }
}

SimFaultPlan::Binding FaultInjector::BindWorkspaces(const ParallelLayout& layout,
                                                    WorkspaceKind kind, GroupRole intended) {
  for (const FaultSpec& f : faults_) {
    const bool stale = f.kind == "stale_workspace_binding";
    if (f.kind != "workspace_bound_to_other_peers" && !stale) continue;
    // Which workspace: the `workspace` parameter, else the MoE one when it
    // has an equal-size group of other peers, else the attention one.
    std::string target;
    if (auto it = f.params.find("workspace"); it != f.params.end()) {
      target = it->second;
    } else {
      const bool moe = scenario_.model.moe &&
                       EqualSizeOtherRole(layout, MoeWorkspaceRole(layout.widths())).has_value();
      target = moe ? "moe" : "attn_tp";
    }
    if (target != WorkspaceKindName(kind)) continue;
    if (const std::optional<GroupRole> role = EqualSizeOtherRole(layout, intended)) {
      return {*role, stale ? 1u : 0u};
    }
  }
  return {intended, 0};
}

void FaultInjector::ApplyLocal(const FaultSpec& f, RankLocalState& st) const {
  const std::string_view k = f.kind;
  if (k == "workspace_initialized_view") {
    st.workspace_initialized_view = false;
  } else if (k == "capacity_view") {
    int64_t smallest = scenario_.workload.tokens.front();
    for (int64_t t : scenario_.workload.tokens) smallest = std::min(smallest, t);
    st.max_tokens_view = Param(f, "max_tokens", std::max<int64_t>(0, smallest - 1));
  } else if (k == "dtype_seen") {
    auto it = f.params.find("dtype");
    absl::StatusOr<DType> d = it != f.params.end() ? ParseDType(it->second)
                              : scenario_.dispatch.dtype == DType::kFp32
                                  ? absl::StatusOr<DType>(DType::kBf16)
                                  : absl::StatusOr<DType>(DType::kFp32);
    st.dtype_seen = d.ok() ? *d : DType::kFp32;
  } else if (k == "token_count_view") {
    st.token_count_skew = Param(f, "delta", 1);
  } else if (k == "contiguity_view") {
    st.contiguous_view = false;
  } else if (k == "backend_flag") {
    st.fused_backend_flag = false;
  } else if (k == "library_unavailable") {
    st.library_loaded = false;
  } else if (k == "tracing_state") {
    st.tracing = true;
  } else if (k == "graph_capture_state") {
    st.graph_capturing = true;
  } else if (k == "sm_count_divergence") {
    st.sm_count = static_cast<int>(Param(f, "sm_count", 66));
  } else if (k == "fp32_acc_env") {
    st.fp32_acc_env = true;
  } else if (k == "workspace_alloc_failure") {
    st.workspace_allocated = false;
  }
}

void FaultInjector::InitLocalState(int rank, RankLocalState& state) {
  for (const FaultSpec& f : faults_) {
    if (!IsLocalStateFault(f.kind) || f.at_step >= 0) continue;
    if (std::find(f.ranks.begin(), f.ranks.end(), rank) != f.ranks.end()) ApplyLocal(f, state);
  }
}

bool FaultInjector::KillsRank(int rank, int64_t call) {
  for (const FaultSpec* f : For("rank_killed", rank)) {
    if (call == f->at_call) return true;
  }
  return false;
}

void FaultInjector::StepLocalState(int rank, int step, RankLocalState& state) const {
  for (const FaultSpec& f : faults_) {
    if (std::find(f.ranks.begin(), f.ranks.end(), rank) == f.ranks.end()) continue;
    if (IsLocalStateFault(f.kind) && f.at_step == step) ApplyLocal(f, state);
  }
}

int64_t FaultInjector::StragglerDelayUs(int rank, int step) const {
  int64_t delay = 0;
  for (const FaultSpec* f : For("straggler", rank)) {
    if (f->at_step < 0 || f->at_step == step) delay += Param(*f, "delay_us", 200);
  }
  return delay;
}

void FaultInjector::OnStep(SimRun& run, int rank, int step) {
  StepLocalState(rank, step, run.ranks[static_cast<size_t>(rank)].local);
  for (const FaultSpec& f : faults_) {
    if (std::find(f.ranks.begin(), f.ranks.end(), rank) == f.ranks.end()) continue;
    if (f.kind == "straggler" && (f.at_step < 0 || f.at_step == step)) {
      SimContext& ctx = run.ctx;
      ctx.AdvanceTo(rank, ctx.Clock(rank) + Param(f, "delay_us", 200) * 1000);
      // Late in the schedule too: let everyone else run first.
      for (int i = 0; i < 3; ++i) ctx.scheduler.Yield();
    }
  }
}

absl::Status FaultInjector::BeforeBackendCall(int rank, int64_t call, const DecisionRecord&) {
  for (const FaultSpec* f : For("kernel_launch_failure", rank)) {
    if (call == f->at_call) {
      return absl::InternalError(absl::StrFormat(
          "CUDA error: unspecified launch failure (all-reduce call %d on rank %d)", call, rank));
    }
  }
  for (const FaultSpec* f : For("illegal_address", rank)) {
    if (call >= f->at_call) {
      return absl::InternalError(absl::StrFormat(
          "CUDA error: an illegal memory access was encountered (sticky since call %d on rank "
          "%d)",
          f->at_call, rank));
    }
  }
  return absl::OkStatus();
}

uint8_t FaultInjector::InputFlags(int rank, int64_t call) {
  uint8_t flags = 0;
  for (const FaultSpec* f : For("negative_zero_inputs", rank)) {
    if (f->at_call < 0 || call >= f->at_call) flags |= kHasNegZero;
  }
  for (const FaultSpec* f : For("negative_subnormal_inputs", rank)) {
    if (f->at_call < 0 || call >= f->at_call) flags |= kHasNegSubnormal;
  }
  return flags;
}

bool FaultInjector::ForcesFtz() const { return Has("negative_subnormal_inputs"); }

bool FaultInjector::DropsPush(int rank, int, uint64_t epoch) {
  for (const FaultSpec* f : For("lost_write", rank)) {
    if (fired_.count(f) == 0 && static_cast<int64_t>(epoch) >= Param(*f, "epoch", 2)) {
      fired_.insert(f);
      return true;
    }
  }
  return false;
}

bool FaultInjector::DropsFlag(int rank, int target, uint64_t epoch) {
  return DropsPush(rank, target, epoch);
}

int FaultInjector::DelaysPush(int rank, int, uint64_t) {
  for (const FaultSpec* f : For("late_write", rank)) {
    return static_cast<int>(Param(*f, "steps", 25));
  }
  return 0;
}

bool FaultInjector::DropsClear(int rank, uint64_t epoch) {
  for (const FaultSpec* f : For("uncleared_buffer", rank)) {
    if (static_cast<int64_t>(epoch) == Param(*f, "epoch", 2)) return true;
  }
  return false;
}

}  // namespace lockstep::faults
