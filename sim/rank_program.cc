// What one simulated rank executes: the forward steps of a model, with every
// all-reduce a real server makes going through the real dispatch core.

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "sim/sim_run.h"

namespace lockstep {
namespace {

class RankProgram {
 public:
  RankProgram(SimRun& run, int rank)
      : run_(run),
        ctx_(run.ctx),
        rank_(rank),
        w_(ctx_.layout.widths()),
        scenario_(ctx_.scenario),
        rt_(run.ranks[static_cast<size_t>(rank)]) {
    const int layers =
        scenario_.workload.layers > 0 ? scenario_.workload.layers : scenario_.model.layers;
    stage_ = rank / w_.tp;
    first_layer_ = stage_ * layers / w_.pp;
    end_layer_ = (stage_ + 1) * layers / w_.pp;
    // The MoE reduction must cover every rank of this TP block that shares
    // this rank's MoE-DP index: EP x MoE-TP.
    const int base = stage_ * w_.tp;
    const int span = w_.moe_ep * w_.moe_tp;
    const int d = (rank - base) / span;
    for (int k = 0; k < span; ++k) moe_group_.ranks.push_back(base + d * span + k);
    const GroupId attn = ctx_.layout.GroupOf(GroupRole::kAttnTp, rank);
    attn_group_.ranks.assign(ctx_.layout.Peers(attn).begin(), ctx_.layout.Peers(attn).end());
    std::sort(attn_group_.ranks.begin(), attn_group_.ranks.end());
    attn_group_.Seal();
    moe_group_.Seal();
    attn_dp_index_ = (rank - base) / w_.attn_tp;
  }

  void Run() {
    for (int step = 0; step < scenario_.workload.steps && !ctx_.stopped(); ++step) {
      if (ctx_.faults != nullptr) ctx_.faults->OnStep(run_, rank_, step);
      if (!Step(step)) return;
      ctx_.scheduler.Yield();  // step boundary
    }
  }

 private:
  int64_t Cycle(const std::vector<int64_t>& v, int step) const {
    return v[static_cast<size_t>(step) % v.size()];
  }
  int64_t DpTokens(int step, int dp_group) const {
    const auto& dp = scenario_.workload.dp_tokens;
    if (!dp.empty()) return Cycle(dp[static_cast<size_t>(dp_group) % dp.size()], step);
    return Cycle(scenario_.workload.tokens, step);
  }
  int64_t Hidden() const { return scenario_.model.hidden; }
  DType Dtype() const { return scenario_.dispatch.dtype; }

  GroupCoordinator& Coordinator(GroupRole role) {
    return *rt_.coordinators[static_cast<size_t>(ctx_.layout.ObjectIndex(role))];
  }

  void Compute(int64_t tokens, int tp) {
    ctx_.AdvanceTo(
        rank_, ctx_.Clock(rank_) + ctx_.hardware.LayerComputeNs(scenario_.model, tokens, tp) / 2);
  }

  // One dispatched all-reduce of `data` over `role`. False when the rank
  // raised (fail-stop) or the run ended.
  bool Reduce(const SiteRef& site, GroupRole role, const TensorDesc& desc, SimTensor& data,
              FusionPattern pattern = FusionPattern::kAllReduce) {
    ctx_.scheduler.Yield();  // a communicator call is a scheduling point
    if (ctx_.stopped()) return false;
    if (ctx_.faults != nullptr &&
        ctx_.faults->KillsRank(rank_, static_cast<int64_t>(rt_.calls_made))) {
      // The process dies here: it never makes this call or any other.
      ctx_.scheduler.Kill(rank_);
      killed_ = true;
      return false;
    }
    GroupCoordinator& coordinator = Coordinator(role);
    const int object = ctx_.layout.ObjectIndex(role);
    Tensor tensor{desc, &data};
    DecisionRecord record;
    CallContext context;
    context.pattern = pattern;
    const int64_t begin = ctx_.Clock(rank_);
    rt_.current_object = object;
    rt_.current_site = site;
    const absl::Status status = coordinator.AllReduce(tensor, &record, context);
    if (record.backend != BackendKind::kSkip) {
      TraceEvent event;
      event.rank = rank_;
      event.site = site;
      event.object = object;
      event.group = coordinator.group();
      event.backend = record.backend;
      event.algorithm = record.algorithm;
      event.tokens = desc.tokens();
      event.seq = record.seq;
      event.begin_ns = begin;
      event.end_ns = ctx_.Clock(rank_);
      event.failed = !status.ok();
      ctx_.trace.Add(event);
    }
    if (!status.ok()) {
      // The rank raises; the launcher tears the job down.
      ctx_.Report(Finding{
          Verdict::kFailStop,
          absl::StrFormat("rank %d raised in %s all-reduce at %s: %s", rank_,
                          BackendKindName(record.backend), site.ToString(), status.ToString()),
          {{"rank", rank_},
           {"site", site.ToString()},
           {"backend", std::string(BackendKindName(record.backend))},
           {"error", status.ToString()}},
          rank_,
          ctx_.Clock(rank_)});
      return false;
    }
    return !ctx_.stopped();
  }

  // A set of ranks a reduction must cover, and the key that identifies it.
  struct Expected {
    std::vector<int> ranks;
    uint64_t key = 0;
    void Seal() {
      StableHasher h;
      for (int r : ranks) h.Add(static_cast<uint64_t>(r));
      key = h.digest();
    }
  };

  bool Check(const SiteRef& site, uint64_t instance, const Expected& expected,
             const SimTensor& data) {
    return run_.checker.Check(
        ctx_, ReductionCheck{rank_, site, instance, expected.ranks, expected.key, data.elems},
        data);
  }

  SimTensor Input(uint64_t instance, int64_t elems) {
    const uint8_t flags = ctx_.faults != nullptr
                              ? ctx_.faults->InputFlags(rank_, static_cast<int64_t>(rt_.calls_made))
                              : uint8_t{0};
    return MakeInput(ctx_, rank_, instance, elems, flags);
  }

  // A site whose reduction over `role` must cover exactly `expected`.
  bool Site(const SiteRef& site, GroupRole role, const TensorDesc& desc, const Expected& expected,
            FusionPattern pattern = FusionPattern::kAllReduce) {
    SimTensor data = Input(site.Instance(), desc.numel());
    if (!Reduce(site, role, desc, data, pattern)) return false;
    return Check(site, site.Instance(), expected, data);
  }

  bool Step(int step) {
    const int64_t t_dp = std::max<int64_t>(
        1, DpTokens(step, attn_dp_index_) + run_.token_skew[static_cast<size_t>(rank_)]);
    int64_t t_moe = t_dp;
    const int last_stage = w_.pp - 1;

    // DP attention: the MoE runs on the tokens of every attention-DP group,
    // padded to the largest; the counts are agreed by an all-gather over TP.
    if (ctx_.layout.config().dp_attention && w_.attn_dp > 1) {
      SimComm* comm = TpComm();
      if (comm == nullptr) return false;
      ctx_.scheduler.Yield();
      const std::vector<int64_t> counts = comm->AllGather(comm->MemberOf(rank_), t_dp);
      if (ctx_.stopped()) return false;
      t_moe = run_.policy.DpPaddedTokens(counts, t_dp, w_.attn_dp, rt_.local);
    }

    if (stage_ == 0) {
      if (scenario_.workload.embedding) {
        TensorDesc desc = TensorDesc::Matrix(1, t_dp, Dtype());
        desc.ndim = 3;
        desc.dims = {1, t_dp, Hidden(), 0};
        if (!Site({step, -1, SiteKind::kEmbedding}, GroupRole::kAttnTp, desc, attn_group_)) {
          return false;
        }
      }
    } else {
      ctx_.scheduler.Yield();
      const int64_t got = run_.mailbox.Recv(rank_, rank_ - w_.tp);
      if (ctx_.stopped()) return false;
      if (got != t_dp * Hidden()) {
        ctx_.Report(Finding{Verdict::kMismatch,
                            absl::StrFormat("rank %d received %d activation elements from rank "
                                            "%d, expected %d",
                                            rank_, got, rank_ - w_.tp, t_dp * Hidden()),
                            {{"rank", rank_}},
                            rank_,
                            ctx_.Clock(rank_)});
        return false;
      }
    }

    struct Pending {
      GroupRole group;
      SiteRef site;
    };
    std::optional<Pending> pending;
    const TensorDesc attn_desc = TensorDesc::Matrix(t_dp, Hidden(), Dtype());
    const TensorDesc moe_desc = TensorDesc::Matrix(t_moe, Hidden(), Dtype());
    const bool fused_norm = scenario_.model.ar_norm_fusion && scenario_.dispatch.fused_backend;

    for (int layer = first_layer_; layer < end_layer_; ++layer) {
      if (pending) {
        // The previous layer's post-experts reduction, fused into this
        // layer's input AR + residual + RMSNorm over one group.
        SimTensor data = Input(pending->site.Instance(), moe_desc.numel());
        SiteRef site{step, layer, SiteKind::kMoeDeferred};
        if (!Reduce(site, pending->group, moe_desc, data,
                    FusionPattern::kAllReduceResidualRmsNorm)) {
          return false;
        }
        if (!Check(site, pending->site.Instance(), moe_group_, data)) return false;
        pending.reset();
      }
      Compute(t_dp, w_.attn_tp);
      if (!Site(
              {step, layer, SiteKind::kAttnOut}, GroupRole::kAttnTp, attn_desc, attn_group_,
              fused_norm ? FusionPattern::kAllReduceResidualRmsNorm : FusionPattern::kAllReduce)) {
        return false;
      }
      const bool moe_layer = scenario_.model.moe && layer >= scenario_.model.first_moe_layer;
      if (!moe_layer) {
        Compute(t_dp, w_.attn_tp);
        if (!Site({step, layer, SiteKind::kDenseMlp}, GroupRole::kAttnTp, attn_desc, attn_group_)) {
          return false;
        }
        continue;
      }
      Compute(t_moe, w_.tp);
      const bool last_in_stage = layer + 1 == end_layer_;
      FusionGateInputs gate;
      gate.fused_backend_enabled = scenario_.dispatch.fused_backend;
      gate.model_supports_ar_norm_fusion = scenario_.model.ar_norm_fusion;
      gate.tokens = t_moe;
      gate.max_fused_tokens = scenario_.dispatch.max_fused_norm_tokens;
      const bool fuse = !last_in_stage && run_.policy.ShouldFuseMlpAllReduceWithNextLayer(w_, gate);
      const SiteRef moe_site{step, layer, SiteKind::kMoe};
      if (fuse) {
        const PostExpertsPlan plan = run_.policy.PlanPostExperts(w_, true);
        pending = Pending{plan.fused_group, moe_site};
        continue;
      }
      const bool flush = last_in_stage && stage_ != last_stage;
      const PostExpertsPlan plan =
          flush ? run_.policy.PlanPipelineFlush(w_) : run_.policy.PlanPostExperts(w_, false);
      if (plan.reductions.empty()) continue;  // single-rank MoE groups
      SimTensor data = Input(moe_site.Instance(), moe_desc.numel());
      for (size_t part = 0; part < plan.reductions.size(); ++part) {
        SiteRef site{step, layer, flush ? SiteKind::kMoeFlush : SiteKind::kMoe,
                     static_cast<uint8_t>(part)};
        if (!Reduce(site, plan.reductions[part], moe_desc, data)) return false;
      }
      if (!Check(moe_site, moe_site.Instance(), moe_group_, data)) return false;
      if (run_.policy.ReduceReplicatedOutput(w_)) {
        SiteRef site{step, layer, SiteKind::kMoeReplicated};
        if (!Reduce(site, GroupRole::kAttnTp, moe_desc, data)) return false;
        if (!Check(site, moe_site.Instance(), moe_group_, data)) return false;
      }
    }

    if (stage_ == last_stage) {
      if (scenario_.workload.speculative) {
        if (!Site({step, -1, SiteKind::kDraftProjection}, run_.policy.DraftProjectionGroup(),
                  attn_desc, attn_group_)) {
          return false;
        }
      }
    } else {
      run_.mailbox.Send(rank_, rank_ + w_.tp, t_dp * Hidden());
    }
    return true;
  }

  SimComm* TpComm() {
    const int object = ctx_.layout.ObjectIndex(GroupRole::kTp);
    const int32_t index = run_.comm_of[static_cast<size_t>(object)][static_cast<size_t>(rank_)];
    return index < 0 ? nullptr : run_.comms[static_cast<size_t>(index)].get();
  }

  SimRun& run_;
  SimContext& ctx_;
  int rank_;
  const ParallelWidths& w_;
  const Scenario& scenario_;
  RankRuntime& rt_;
  int stage_ = 0;
  int first_layer_ = 0;
  int end_layer_ = 0;
  int attn_dp_index_ = 0;
  bool killed_ = false;
  Expected moe_group_;
  Expected attn_group_;
};

}  // namespace

void RunRankProgram(SimRun& run, int rank) {
  RankProgram program(run, rank);
  program.Run();
}

}  // namespace lockstep
