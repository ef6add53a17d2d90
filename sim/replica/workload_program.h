// The forward steps of a scenario's model as one rank executes them: which
// all-reduces it makes, over which group, with which shape and fusion, and
// which ranks each reduction must cover. Written once and run by two hosts:
// the simulator (sim/rank_program.cc, simulated memory and fibers) and the
// hardware runner (hw/, device tensors and NCCL), so that both make exactly
// the same sequence of dispatched calls for a scenario.
//
// A Host provides:
//   using Data;                                   // one call's tensor
//   bool Stopped();                               // the run is over
//   void BeginStep(int step);  void EndStep();    // step boundaries
//   int64_t TokenSkew();                          // tokens added on this rank
//   // The TP group's token counts (DP attention); nullopt ends the rank.
//   std::optional<std::vector<int64_t>> AllGatherTokens(int64_t mine);
//   bool RecvActivation(int from, int64_t elems); void SendActivation(int to, int64_t elems);
//   void Compute(int64_t tokens, int tp);
//   Data Input(uint64_t instance, int64_t elems);
//   // One dispatched all-reduce; false when the rank raised or the run ended.
//   bool Reduce(const SiteRef&, GroupRole, const TensorDesc&, Data&, FusionPattern);
//   // Whether `data` is the reduction of `expected`'s inputs for `instance`.
//   bool Check(const SiteRef&, uint64_t instance, const ExpectedRanks&, const Data&);
//   const DispatchPolicy& Policy();  const RankLocalState& Local();

#ifndef LOCKSTEP_SIM_REPLICA_WORKLOAD_PROGRAM_H_
#define LOCKSTEP_SIM_REPLICA_WORKLOAD_PROGRAM_H_

#include <algorithm>
#include <optional>
#include <vector>

#include "dispatch/fusion_gate.h"
#include "dispatch/group_layout.h"
#include "dispatch/policy.h"
#include "dispatch/stable_hash.h"
#include "dispatch/tensor.h"
#include "sim/replica/site.h"
#include "sim/scenario/scenario.h"

namespace lockstep {

// A set of ranks a reduction must cover, and the key that identifies it.
struct ExpectedRanks {
  std::vector<int> ranks;
  uint64_t key = 0;
  void Seal() {
    StableHasher h;
    for (int r : ranks) h.Add(static_cast<uint64_t>(r));
    key = h.digest();
  }
};

template <class Host>
class WorkloadProgram {
 public:
  WorkloadProgram(Host& host, const Scenario& scenario, const ParallelLayout& layout, int rank)
      : host_(host), scenario_(scenario), layout_(layout), rank_(rank), w_(layout.widths()) {
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
    const GroupId attn = layout_.GroupOf(GroupRole::kAttnTp, rank);
    attn_group_.ranks.assign(layout_.Peers(attn).begin(), layout_.Peers(attn).end());
    std::sort(attn_group_.ranks.begin(), attn_group_.ranks.end());
    attn_group_.Seal();
    moe_group_.Seal();
    attn_dp_index_ = (rank - base) / w_.attn_tp;
  }

  void Run() {
    for (int step = 0; step < scenario_.workload.steps && !host_.Stopped(); ++step) {
      host_.BeginStep(step);
      if (!Step(step)) return;
      host_.EndStep();
    }
  }

 private:
  using Data = typename Host::Data;

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

  // A site whose reduction over `role` must cover exactly `expected`.
  bool Site(const SiteRef& site, GroupRole role, const TensorDesc& desc,
            const ExpectedRanks& expected, FusionPattern pattern = FusionPattern::kAllReduce) {
    Data data = host_.Input(site.Instance(), desc.numel());
    if (!host_.Reduce(site, role, desc, data, pattern)) return false;
    return host_.Check(site, site.Instance(), expected, data);
  }

  bool Step(int step) {
    const int64_t t_dp = std::max<int64_t>(1, DpTokens(step, attn_dp_index_) + host_.TokenSkew());
    int64_t t_moe = t_dp;
    const int last_stage = w_.pp - 1;
    const DispatchPolicy& policy = host_.Policy();

    // DP attention: the MoE runs on the tokens of every attention-DP group,
    // padded to the largest; the counts are agreed by an all-gather over TP.
    if (layout_.config().dp_attention && w_.attn_dp > 1) {
      const std::optional<std::vector<int64_t>> counts = host_.AllGatherTokens(t_dp);
      if (!counts) return false;
      t_moe = policy.DpPaddedTokens(*counts, t_dp, w_.attn_dp, host_.Local());
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
    } else if (!host_.RecvActivation(rank_ - w_.tp, t_dp * Hidden())) {
      return false;
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
        Data data = host_.Input(pending->site.Instance(), moe_desc.numel());
        SiteRef site{step, layer, SiteKind::kMoeDeferred};
        if (!host_.Reduce(site, pending->group, moe_desc, data,
                          FusionPattern::kAllReduceResidualRmsNorm)) {
          return false;
        }
        if (!host_.Check(site, pending->site.Instance(), moe_group_, data)) return false;
        pending.reset();
      }
      host_.Compute(t_dp, w_.attn_tp);
      if (!Site(
              {step, layer, SiteKind::kAttnOut}, GroupRole::kAttnTp, attn_desc, attn_group_,
              fused_norm ? FusionPattern::kAllReduceResidualRmsNorm : FusionPattern::kAllReduce)) {
        return false;
      }
      const bool moe_layer = scenario_.model.moe && layer >= scenario_.model.first_moe_layer;
      if (!moe_layer) {
        host_.Compute(t_dp, w_.attn_tp);
        if (!Site({step, layer, SiteKind::kDenseMlp}, GroupRole::kAttnTp, attn_desc, attn_group_)) {
          return false;
        }
        continue;
      }
      host_.Compute(t_moe, w_.tp);
      const bool last_in_stage = layer + 1 == end_layer_;
      FusionGateInputs gate;
      gate.fused_backend_enabled = scenario_.dispatch.fused_backend;
      gate.model_supports_ar_norm_fusion = scenario_.model.ar_norm_fusion;
      gate.tokens = t_moe;
      gate.max_fused_tokens = scenario_.dispatch.max_fused_norm_tokens;
      const bool fuse = !last_in_stage && policy.ShouldFuseMlpAllReduceWithNextLayer(w_, gate);
      const SiteRef moe_site{step, layer, SiteKind::kMoe};
      if (fuse) {
        const PostExpertsPlan plan = policy.PlanPostExperts(w_, true);
        pending = Pending{plan.fused_group, moe_site};
        continue;
      }
      const bool flush = last_in_stage && stage_ != last_stage;
      const PostExpertsPlan plan =
          flush ? policy.PlanPipelineFlush(w_) : policy.PlanPostExperts(w_, false);
      if (plan.reductions.empty()) continue;  // single-rank MoE groups
      Data data = host_.Input(moe_site.Instance(), moe_desc.numel());
      for (size_t part = 0; part < plan.reductions.size(); ++part) {
        SiteRef site{step, layer, flush ? SiteKind::kMoeFlush : SiteKind::kMoe,
                     static_cast<uint8_t>(part)};
        if (!host_.Reduce(site, plan.reductions[part], moe_desc, data, FusionPattern::kAllReduce)) {
          return false;
        }
      }
      if (!host_.Check(moe_site, moe_site.Instance(), moe_group_, data)) return false;
      if (policy.ReduceReplicatedOutput(w_)) {
        SiteRef site{step, layer, SiteKind::kMoeReplicated};
        if (!host_.Reduce(site, GroupRole::kAttnTp, moe_desc, data, FusionPattern::kAllReduce)) {
          return false;
        }
        if (!host_.Check(site, moe_site.Instance(), moe_group_, data)) return false;
      }
    }

    if (stage_ == last_stage) {
      if (scenario_.workload.speculative) {
        if (!Site({step, -1, SiteKind::kDraftProjection}, policy.DraftProjectionGroup(), attn_desc,
                  attn_group_)) {
          return false;
        }
      }
    } else {
      host_.SendActivation(rank_ + w_.tp, t_dp * Hidden());
    }
    return true;
  }

  Host& host_;
  const Scenario& scenario_;
  const ParallelLayout& layout_;
  int rank_;
  const ParallelWidths& w_;
  int stage_ = 0;
  int first_layer_ = 0;
  int end_layer_ = 0;
  int attn_dp_index_ = 0;
  ExpectedRanks moe_group_;
  ExpectedRanks attn_group_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_WORKLOAD_PROGRAM_H_
