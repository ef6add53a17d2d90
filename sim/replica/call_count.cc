#include "sim/replica/call_count.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatch/rank_local_state.h"
#include "sim/replica/replica_config.h"
#include "sim/replica/workload_program.h"

namespace lockstep {
namespace {

// A workload host that makes no call but counts them.
class CountingHost {
 public:
  struct Data {};

  CountingHost(const Scenario& scenario, const ParallelLayout& layout, const DispatchPolicy& policy,
               const ReplicaConfig& config, int rank)
      : scenario_(scenario), layout_(layout), policy_(policy), config_(config), rank_(rank) {}

  bool Stopped() const { return false; }
  void BeginStep(int step) { step_ = step; }
  void EndStep() {}
  int64_t TokenSkew() const { return 0; }
  const DispatchPolicy& Policy() const { return policy_; }
  const ReplicaConfig& Config() const { return config_; }
  const RankLocalState& Local() const { return local_; }

  // What the TP group's all-gather returns: each member's attention-DP
  // group's token count this step.
  std::optional<std::vector<int64_t>> AllGatherTokens(int64_t /*mine*/) {
    const ParallelWidths& w = layout_.widths();
    const WorkloadSpec& wl = scenario_.workload;
    std::vector<int64_t> counts;
    counts.reserve(static_cast<size_t>(w.tp));
    for (int t = 0; t < w.tp; ++t) {
      const int group = t / w.attn_tp;
      const std::vector<int64_t>& tokens =
          wl.dp_tokens.empty() ? wl.tokens
                               : wl.dp_tokens[static_cast<size_t>(group) % wl.dp_tokens.size()];
      counts.push_back(tokens[static_cast<size_t>(step_) % tokens.size()]);
    }
    return counts;
  }
  // Every member brings the same value: what a fault-free run agrees on.
  std::optional<std::vector<int64_t>> AllGatherValue(int64_t mine, std::string_view /*what*/) {
    return std::vector<int64_t>(static_cast<size_t>(layout_.widths().tp), mine);
  }
  void SetFusedTactic(FusedTactic /*tactic*/) {}
  int64_t ClockUs() const { return 0; }
  bool RecvActivation(int /*from*/, int64_t /*elems*/) { return true; }
  void SendActivation(int /*to*/, int64_t /*elems*/) {}
  void Compute(int64_t /*tokens*/, int /*tp*/) {}
  Data Input(const SiteRef& /*at*/, uint64_t /*instance*/, int64_t /*elems*/) { return {}; }
  Data InputRows(uint64_t, int64_t, int64_t, int64_t, int64_t) { return {}; }
  Data Rows(const Data&, int64_t, int64_t, int64_t) const { return {}; }
  // Captured calls only decide: they reach no backend until replayed.
  void BeginGraph(CallPhase phase, int64_t /*tokens*/) { phase_ = phase; }
  void EndGraph() { phase_ = CallPhase::kEager; }
  bool RegisterGraphInputs() { return true; }
  bool SetUpWorkspaces() { return true; }
  // A call reaches a backend (and counts) unless its group has one rank.
  bool Reduce(const SiteRef& site, GroupRole role, const TensorDesc&, Data&, const CallContext&) {
    if (phase_ != CallPhase::kCapture && layout_.GroupSize(layout_.GroupOf(role, rank_)) > 1) {
      ++calls_;
      if (sites_ != nullptr) {
        sites_->push_back(site);
        sites_->back().phase = phase_;
      }
    }
    return true;
  }
  // Also list each counted call's site in `sites` (not owned; null: don't).
  void set_sites(std::vector<SiteRef>* sites) { sites_ = sites; }
  bool Collective(const SiteRef&, RowCollective, GroupRole, const std::vector<int64_t>&, int64_t,
                  Data&) {
    return true;
  }
  bool Check(const SiteRef&, uint64_t, const ExpectedRanks&, const Data&) { return true; }
  std::shared_ptr<const std::vector<int64_t>> Shared(std::vector<int64_t> v) {
    return std::make_shared<const std::vector<int64_t>>(std::move(v));
  }

  int64_t calls() const { return calls_; }

 private:
  const Scenario& scenario_;
  const ParallelLayout& layout_;
  const DispatchPolicy& policy_;
  const ReplicaConfig& config_;
  int rank_;
  RankLocalState local_;
  int step_ = 0;
  CallPhase phase_ = CallPhase::kEager;
  int64_t calls_ = 0;
  std::vector<SiteRef>* sites_ = nullptr;
};

uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  uint64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? ~uint64_t{0} : out;
}

}  // namespace

int64_t CountRankCalls(const Scenario& scenario, const ParallelLayout& layout,
                       const DispatchPolicy& policy, int rank) {
  absl::StatusOr<ReplicaConfig> config = ResolveReplicaConfig(scenario, layout, policy);
  if (!config.ok()) return 0;
  CountingHost host(scenario, layout, policy, *config, rank);
  WorkloadProgram<CountingHost> program(host, scenario, layout, rank);
  program.Run();
  return host.calls();
}

std::vector<SiteRef> RankCallSites(const Scenario& scenario, const ParallelLayout& layout,
                                   const DispatchPolicy& policy, int rank) {
  std::vector<SiteRef> sites;
  absl::StatusOr<ReplicaConfig> config = ResolveReplicaConfig(scenario, layout, policy);
  if (!config.ok()) return sites;
  CountingHost host(scenario, layout, policy, *config, rank);
  host.set_sites(&sites);
  WorkloadProgram<CountingHost> program(host, scenario, layout, rank);
  program.Run();
  return sites;
}

uint64_t MaxCallsPerRank(const Scenario& scenario, const ParallelWidths& widths) {
  const int layers =
      scenario.workload.layers > 0 ? scenario.workload.layers : scenario.model.layers;
  // Per step: embedding, draft projection and the stage's hand-off flush; per
  // dense layer the attention (or attention DP's gather) and the MLP's sum
  // (now, deferred or returned over DP: one of them); per MoE layer those, up
  // to two post-experts reductions, the MoE-CP gather and the replicated output.
  uint64_t most = 0;
  for (int stage = 0; stage < widths.pp; ++stage) {
    const int first = stage * layers / widths.pp;
    const int end = (stage + 1) * layers / widths.pp;
    const int moe_from = scenario.model.moe ? std::max(first, scenario.model.first_moe_layer) : end;
    const auto moe = static_cast<uint64_t>(std::max(0, end - moe_from));
    const auto dense = static_cast<uint64_t>(end - first) - moe;
    most = std::max(most, 3 + 2 * dense + 5 * moe);
  }
  // Each captured CUDA graph decides a step's calls once more (a decision
  // and a trace event each, as a call).
  const uint64_t passes =
      static_cast<uint64_t>(scenario.workload.steps) + scenario.workload.cuda_graph_tokens.size();
  return SaturatingMul(passes, most);
}

}  // namespace lockstep
