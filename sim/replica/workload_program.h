// The forward steps of a scenario's model as one rank executes them: which
// all-reduces it makes, over which group, with which shape and fusion, which
// other collectives attention DP needs, and which ranks each reduction must
// cover. Written once and run by two hosts: the simulator
// (sim/rank_program.cc, simulated memory and fibers) and the hardware runner
// (hw/hw_rank.cc, device tensors and NCCL), so that both make exactly the
// same sequence of calls for a scenario. Every structural choice (which sums
// a layer owes and how they complete) is the policy's (dispatch/policy.h):
// SGLang 0.5.23's layer boundary by default, PR #30700's under
// "sglang-pr30700".
//
// A Host provides:
//   using Data;                                   // one call's tensor
//   bool Stopped();                               // the run is over
//   void BeginStep(int step);  void EndStep();    // step boundaries
//   int64_t TokenSkew();                          // tokens added on this rank
//   // The TP group's token counts, one per TP rank; nullopt ends the rank.
//   std::optional<std::vector<int64_t>> AllGatherTokens(int64_t mine);
//   // One value per TP rank, for the collective `what` ("autotuner
//   // handshake"; named in a bounded wait's report); nullopt ends the rank.
//   std::optional<std::vector<int64_t>> AllGatherValue(int64_t mine, std::string_view what);
//   void SetFusedTactic(FusedTactic);             // what the autotuner chose
//   int64_t ClockUs();                            // this rank's clock, µs into the run
//   bool RecvActivation(int from, int64_t elems); void SendActivation(int to, int64_t elems);
//   void Compute(int64_t tokens, int tp);
//   // This rank's contribution: every row, or only rows [first, first + n)
//   // of a buffer of `rows` rows (zeros elsewhere). `at` is the site of the
//   // call or collective that consumes it (where input faults are placed).
//   Data Input(const SiteRef& at, uint64_t instance, int64_t elems);
//   Data InputRows(uint64_t instance, int64_t rows, int64_t hidden, int64_t first, int64_t n);
//   // One dispatched all-reduce; false when the rank raised or the run ended.
//   bool Reduce(const SiteRef&, GroupRole, const TensorDesc&, Data&, const CallContext&);
//   // A NCCL collective outside the all-reduce chain (rows per member, in the
//   // group's order): reduce-scatter(v) or all-gather of rows. `data` is replaced.
//   bool Collective(const SiteRef&, RowCollective, GroupRole, const std::vector<int64_t>& rows,
//                   int64_t hidden, Data&);
//   // `v`, or an equal list the host already holds for another rank: lists
//   // as long as the TP group (row counts, attention-DP batch plans) that
//   // every rank keeps while it waits would otherwise cost the world's square.
//   std::shared_ptr<const std::vector<int64_t>> Shared(std::vector<int64_t> v);
//   // Rows [first, first + n) of `data`.
//   Data Rows(const Data&, int64_t first, int64_t n, int64_t hidden);
//   // Whether `data` is the reduction of `expected`'s inputs for `instance`.
//   bool Check(const SiteRef&, uint64_t instance, const ExpectedRanks&, const Data&);
//   const DispatchPolicy& Policy();  const RankLocalState& Local();
//   const ReplicaConfig& Config();
//   // The calls until EndGraph are captured into (kCapture) or replayed from
//   // (kReplay) the CUDA graph of `tokens` (workload.cuda_graph_tokens);
//   // the host stamps each call's site with the phase.
//   void BeginGraph(CallPhase phase, int64_t tokens);  void EndGraph();
//   // Before anything else: the fusion workspaces' set-up collectives (the
//   // allocation vote and the handle exchange), as calls; false ends the rank.
//   bool SetUpWorkspaces();
//   // After the captures: the custom all-reduce's registration of the graph
//   // inputs captured (an exchange over each group); false ends the rank.
//   bool RegisterGraphInputs();

#ifndef LOCKSTEP_SIM_REPLICA_WORKLOAD_PROGRAM_H_
#define LOCKSTEP_SIM_REPLICA_WORKLOAD_PROGRAM_H_

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatch/fused_launch.h"
#include "dispatch/group_layout.h"
#include "dispatch/layer_boundary.h"
#include "dispatch/policy.h"
#include "dispatch/stable_hash.h"
#include "dispatch/tensor.h"
#include "sim/replica/replica_config.h"
#include "sim/replica/site.h"
#include "sim/scenario/scenario.h"

namespace lockstep {

// A set of ranks a reduction must cover (ascending), and the key that
// identifies it. Every rank of a group holds one, so the ranks are a view,
// not a copy: of one shared 0, 1, 2, ... array for a contiguous range (the
// usual case), of the layout's own peer list when it is sorted, and only
// otherwise of a sorted copy this object owns. A copy per rank made world
// 16384 of one wide group cost gigabytes.
struct ExpectedRanks {
  std::span<const int> ranks;
  uint64_t key = 0;
  std::shared_ptr<const std::vector<int>> owned;  // backs `ranks` when neither view applies

  // Ranks [first, first + count).
  static ExpectedRanks Range(int first, int count) {
    ExpectedRanks e;
    e.ranks = std::span<const int>(Iota().data() + first, static_cast<size_t>(count));
    StableHasher h;
    h.Add(uint64_t{0x52414e4745});  // "RANGE": apart from any listed set's key
    h.Add(static_cast<uint64_t>(first));
    h.Add(static_cast<uint64_t>(count));
    e.key = h.digest();
    return e;
  }
  // The members of `group` (O(1) for a range of ranks).
  static ExpectedRanks OfGroup(const ParallelLayout& layout, GroupId group) {
    if (const int first = layout.RangeStart(group); first >= 0) {
      return Range(first, layout.GroupSize(group));
    }
    return Of(layout.Peers(group));
  }
  // `peers` (which must outlive the result when it is sorted: the layout's).
  static ExpectedRanks Of(std::span<const int> peers) {
    if (peers.empty()) return ExpectedRanks{};
    if (IsRange(peers)) return Range(peers.front(), static_cast<int>(peers.size()));
    ExpectedRanks e;
    if (std::is_sorted(peers.begin(), peers.end())) {
      e.ranks = peers;
    } else {
      auto sorted = std::make_shared<std::vector<int>>(peers.begin(), peers.end());
      std::sort(sorted->begin(), sorted->end());
      e.owned = sorted;
      e.ranks = *sorted;
    }
    StableHasher h;
    for (int r : e.ranks) h.Add(static_cast<uint64_t>(r));
    e.key = h.digest();
    return e;
  }

 private:
  static bool IsRange(std::span<const int> peers) {
    for (size_t i = 1; i < peers.size(); ++i) {
      if (peers[i] != peers.front() + static_cast<int>(i)) return false;
    }
    return peers.front() >= 0 && static_cast<size_t>(peers.front()) + peers.size() <= Iota().size();
  }
  // 0, 1, ..., kMaxWorldSize - 1, built once (thread-safe static initialisation).
  static const std::vector<int>& Iota() {
    static const std::vector<int> iota = [] {
      std::vector<int> v(static_cast<size_t>(kMaxWorldSize));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int>(i);
      return v;
    }();
    return iota;
  }
};

// The NCCL collectives attention DP uses besides all-reduces.
enum class RowCollective : uint8_t {
  kReduceScatter,  // each member gets its rows, summed over the group
  kAllGather,      // each member gets every member's rows, concatenated
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
    moe_group_ = ExpectedRanks::Range(base + d * span, span);
    attn_group_ = ExpectedRanks::OfGroup(layout_, layout_.GroupOf(GroupRole::kAttnTp, rank));
    tp_group_ = ExpectedRanks::OfGroup(layout_, layout_.GroupOf(GroupRole::kTp, rank));
    // Attention-DP group index: (dp, cp, tp) order, tp fastest.
    attn_dp_index_ = (rank - base) / (w_.attn_tp * w_.attn_cp);
    // Under attention DP, the attention output's rows of this rank's group
    // are written by the attention-TP ranks of its CP rank 0
    // (dp_attention.py:_dp_gather_via_all_reduce).
    const int group_base = base + attn_dp_index_ * w_.attn_cp * w_.attn_tp;
    gather_writers_ = ExpectedRanks::Range(group_base, w_.attn_tp);
    writes_gather_ = (rank - group_base) < w_.attn_tp;
  }

  void Run() {
    if (!host_.SetUpWorkspaces()) return;
    if (!Autotune()) return;
    if (!CaptureGraphs()) return;
    for (int step = 0; step < scenario_.workload.steps && !host_.Stopped(); ++step) {
      host_.BeginStep(step);
      if (!Step(step)) return;
      host_.EndStep();
    }
  }

 private:
  using Data = typename Host::Data;

  // A sum left to the next layer's input.
  struct Pending {
    ExitPlan exit;
    SiteRef site;  // where the sum was owed
    FfnKind ffn;
  };

  // The start-up autotuner (workload.autotune), over this rank's TP group:
  // a handshake gathers every member's cached tactic; unless every cache
  // holds the same one, each candidate is profiled (one collective each,
  // carrying the member's time) and the policy chooses from the timings.
  // Its collectives are NCCL's, outside the dispatch (not on the trace).
  bool Autotune() {
    const ReplicaConfig& config = host_.Config();
    if (!scenario_.workload.autotune || w_.tp <= 1 ||
        config.fusion_backend == FusionBackend::kNone) {
      return true;
    }
    const DispatchPolicy& policy = host_.Policy();
    const RankLocalState& local = host_.Local();
    const int cached = local.tuner_cache_tactic;
    if (cached >= 0 && !policy.JoinTunerWhenWarm()) {
      host_.SetFusedTactic(FusedTactic{cached});
      return true;
    }
    const std::optional<std::vector<int64_t>> caches =
        host_.AllGatherValue(cached, "autotuner handshake");
    if (!caches) return false;
    const int64_t first = caches->front();
    const bool agreed_cache = first >= 0 && std::all_of(caches->begin(), caches->end(),
                                                        [first](int64_t c) { return c == first; });
    if (agreed_cache) {
      host_.SetFusedTactic(FusedTactic{static_cast<int>(first)});
      return true;
    }
    std::vector<std::vector<int64_t>> timings;
    std::vector<int64_t> mine;
    for (int c = 0; c < kTunerCandidates; ++c) {
      mine.push_back(TunerProfileNs(c, local.tuner_favoured));
      std::optional<std::vector<int64_t>> all =
          host_.AllGatherValue(mine.back(), "autotuner profile run");
      if (!all) return false;
      timings.push_back(*std::move(all));
    }
    host_.SetFusedTactic(policy.ChooseTactic(timings, mine));
    return true;
  }

  // CUDA graphs (workload.cuda_graph_tokens): after the tuner, one forward
  // pass per captured batch size, largest first, each recorded into its
  // graph (decode_cuda_graph_runner.py:1326 @ 0.5.23). A capture exchanges
  // nothing: under attention DP every group's count is the graph's size.
  // It is numbered step -1.
  bool CaptureGraphs() {
    const std::vector<int64_t>& sizes = scenario_.workload.cuda_graph_tokens;
    for (auto it = sizes.rbegin(); it != sizes.rend() && !host_.Stopped(); ++it) {
      host_.BeginGraph(CallPhase::kCapture, *it);
      std::vector<int64_t> counts;
      if (w_.DpAttention()) counts.assign(static_cast<size_t>(w_.tp), *it);
      if (!Forward(kCaptureStep, *it, std::move(counts))) return false;
      host_.EndGraph();
    }
    // One registration per communicator, once every size is captured
    // (decode_cuda_graph_runner.py:1292-1310 @ 0.5.23).
    if (!sizes.empty() && !host_.RegisterGraphInputs()) return false;
    return !host_.Stopped();
  }

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
  CallContext Context(FusionPattern pattern, WorkspaceKind workspace) const {
    CallContext c;
    c.pattern = pattern;
    c.norm_workspace = host_.Policy().NormOnNamedWorkspace() ? workspace : WorkspaceKind::kNone;
    c.norm_fusable = scenario_.model.ar_norm_fusion;
    return c;
  }
  // The pattern of a sum completed at the next norm: fused when the model can.
  FusionPattern NormPattern() const {
    return scenario_.model.ar_norm_fusion ? FusionPattern::kAllReduceResidualRmsNorm
                                          : FusionPattern::kAllReduce;
  }
  ExpectedRanks GroupRanks(GroupRole role) const {
    return ExpectedRanks::OfGroup(layout_, layout_.GroupOf(role, rank_));
  }
  const ExpectedRanks& FfnGroup(FfnKind ffn) const {
    if (ffn == FfnKind::kMoe) return moe_group_;
    return host_.Policy().DenseMlpGroup() == GroupRole::kTp ? tp_group_ : attn_group_;
  }

  // A site whose reduction over `role` must cover exactly `expected`.
  bool Site(const SiteRef& site, GroupRole role, const TensorDesc& desc,
            const ExpectedRanks& expected, const CallContext& context = {}) {
    Data data = host_.Input(site, site.Instance(), desc.numel());
    return ReduceAndCheck(site, role, desc, data, context, site.Instance(), expected);
  }
  // A reduction and the check of its result. A host that can run ahead of
  // its reductions (the simulator's, SimHost::ReduceChecked) takes both at
  // once and may check later, when the group's call completes.
  bool ReduceAndCheck(const SiteRef& site, GroupRole role, const TensorDesc& desc, Data& data,
                      const CallContext& context, uint64_t instance,
                      const ExpectedRanks& expected) {
    if constexpr (requires {
                    host_.ReduceChecked(site, role, desc, data, context, instance, expected);
                  }) {
      return host_.ReduceChecked(site, role, desc, data, context, instance, expected);
    } else {
      if (!host_.Reduce(site, role, desc, data, context)) return false;
      return host_.Check(site, instance, expected, data);
    }
  }

  // Runs `reductions` on `data` (rows x hidden), one site part each.
  bool ReduceAll(const SiteRef& site, const std::vector<GroupRole>& reductions, int64_t rows,
                 Data& data) {
    const TensorDesc desc = TensorDesc::Matrix(rows, Hidden(), Dtype());
    for (size_t part = 0; part < reductions.size(); ++part) {
      SiteRef s = site;
      s.part = static_cast<uint8_t>(part);
      if (!host_.Reduce(s, reductions[part], desc, data,
                        Context(FusionPattern::kAllReduce, WorkspaceKind::kNone))) {
        return false;
      }
    }
    return true;
  }

  // Attention DP: the gathered FFN input, completing the attention output's
  // ATTN_TP sum on the way (SGLang 0.5.23's dp_gather_partial).
  bool DpGather(int step, int layer, int64_t t_dp) {
    const SiteRef site{step, layer, SiteKind::kDpGather};
    const int64_t rows = dp_.global_rows;
    Data data;
    // Attention CP under attention DP is modelled by the all-reduce gather
    // (CP rank 0 writes its group's rows): docs/FIDELITY.md.
    const DpGatherKind gather =
        w_.attn_cp > 1 ? DpGatherKind::kAllReduce : PlanDpGather(w_, dp_.padding);
    switch (gather) {
      case DpGatherKind::kAllReduce: {
        data = host_.InputRows(site.Instance(), rows, Hidden(), dp_.my_offset,
                               writes_gather_ ? t_dp : 0);
        if (!host_.Reduce(site, GroupRole::kTp, TensorDesc::Matrix(rows, Hidden(), Dtype()), data,
                          Context(FusionPattern::kAllReduce, WorkspaceKind::kNone))) {
          return false;
        }
        break;
      }
      case DpGatherKind::kAllGather:
      case DpGatherKind::kReduceScatterThenGather: {
        // MAX_LEN: every group contributes `block` rows (its tokens, padded).
        const int64_t block = rows / w_.attn_dp;
        data = host_.InputRows(site.Instance(), block, Hidden(), 0, writes_gather_ ? t_dp : 0);
        std::vector<int64_t> per_member(static_cast<size_t>(w_.tp), block);
        if (w_.attn_tp > 1) {
          // An attention-TP reduce-scatter of the block, then its pieces
          // gathered over TP.
          const int64_t piece = block / w_.attn_tp;
          std::vector<int64_t> pieces(static_cast<size_t>(w_.attn_tp), piece);
          pieces.back() += block - piece * w_.attn_tp;
          if (!host_.Collective(site, RowCollective::kReduceScatter, GroupRole::kAttnTp, pieces,
                                Hidden(), data)) {
            return false;
          }
          per_member.clear();
          for (int r = 0; r < w_.tp; ++r) {
            per_member.push_back(pieces[static_cast<size_t>(r % w_.attn_tp)]);
          }
        }
        if (!host_.Collective(site, RowCollective::kAllGather, GroupRole::kTp,
                              *host_.Shared(std::move(per_member)), Hidden(), data)) {
          return false;
        }
        break;
      }
    }
    // This rank's rows: its own group's attention output, complete.
    const Data mine = host_.Rows(data, dp_.my_offset, t_dp, Hidden());
    return host_.Check(site, site.Instance(), gather_writers_, mine);
  }

  // Attention DP: the FFN output of `exit` returned to this rank's rows.
  // The MoE output of `owed` is complete and replicated over ATTN_TP: a
  // policy that reduces it once more there counts each contribution attn_tp
  // times (SGLang #31699, #37199). The reference never does.
  bool ReduceReplicatedAgain(const SiteRef& owed, int64_t rows, const ExpectedRanks& expected,
                             Data& data) {
    if (!host_.Policy().ReduceReplicatedOutput(w_)) return true;
    const SiteRef again{owed.step, owed.layer, SiteKind::kMoeReplicated};
    if (!host_.Reduce(again, GroupRole::kAttnTp, TensorDesc::Matrix(rows, Hidden(), Dtype()), data,
                      Context(FusionPattern::kAllReduce, WorkspaceKind::kNone))) {
      return false;
    }
    return host_.Check(again, owed.Instance(), expected, data);
  }

  // `kept`, when given, receives this rank's returned rows.
  bool DpReturn(const SiteRef& owed, const ExitPlan& exit, const ExpectedRanks& expected,
                int64_t t_dp, Data* kept = nullptr) {
    auto keep = [&](Data rows) {
      const bool ok = host_.Check(SiteRef{owed.step, owed.layer, SiteKind::kDpReturn},
                                  owed.Instance(), expected, rows);
      if (kept != nullptr) *kept = std::move(rows);
      return ok;
    };
    const SiteRef site{owed.step, owed.layer, SiteKind::kDpReturn};
    // Reduce-scatterv gives one member per attention-DP group (tp ==
    // attn_dp) its own tokens, of a buffer laid out as SUM_LEN.
    int64_t sum = 0;
    for (int64_t t : *group_rows_) sum += t;
    const int64_t rows = exit.kind == ExitKind::kReduceScatterV ? sum : dp_.global_rows;
    Data data = host_.Input(site, owed.Instance(), rows * Hidden());
    if (exit.kind == ExitKind::kReduceScatterV) {
      if (!host_.Collective(site, RowCollective::kReduceScatter, exit.group, *group_rows_, Hidden(),
                            data)) {
        return false;
      }
      return keep(host_.Rows(data, 0, t_dp, Hidden()));
    }
    if (exit.kind == ExitKind::kReduceScatter) {
      // MAX_LEN: each TP rank gets an equal share; with attention TP the
      // shares of a group are gathered back over ATTN_TP (dp_attention.py:1120-1165).
      const int64_t share = rows / w_.tp;
      std::vector<int64_t> shares(static_cast<size_t>(w_.tp), share);
      shares.back() += rows - share * w_.tp;
      const std::shared_ptr<const std::vector<int64_t>> shared = host_.Shared(std::move(shares));
      if (!host_.Collective(site, RowCollective::kReduceScatter, GroupRole::kTp, *shared, Hidden(),
                            data)) {
        return false;
      }
      if (w_.attn_tp > 1) {
        std::vector<int64_t> group_shares;
        const int first = attn_dp_index_ * w_.attn_cp * w_.attn_tp;
        for (int t = 0; t < w_.attn_tp; ++t) {
          group_shares.push_back((*shared)[static_cast<size_t>(first + t)]);
        }
        if (!host_.Collective(site, RowCollective::kAllGather, GroupRole::kAttnTp, group_shares,
                              Hidden(), data)) {
          return false;
        }
      }
      return keep(host_.Rows(data, 0, t_dp, Hidden()));
    }
    // All-reduce (now or at the next input), then keep this rank's rows.
    const std::vector<GroupRole> reductions = exit.kind == ExitKind::kAllReduceThenScatter
                                                  ? exit.reductions
                                                  : std::vector<GroupRole>{exit.group};
    if (!ReduceAll(site, reductions, rows, data)) return false;
    return keep(host_.Rows(data, dp_.my_offset, t_dp, Hidden()));
  }

  // A deferred sum completed at this layer's input (or before the pipeline
  // hand-off, unfused).
  bool CompletePending(const Pending& p, int step, int layer, int64_t t_moe, int64_t t_dp,
                       bool flush) {
    const ExpectedRanks& expected = FfnGroup(p.ffn);
    if (p.exit.kind == ExitKind::kDeferAllReduceScatter)
      return DpReturn(p.site, p.exit, expected, t_dp);
    const SiteKind kind = flush                    ? SiteKind::kMoeFlush
                          : p.ffn == FfnKind::kMoe ? SiteKind::kMoeDeferred
                                                   : SiteKind::kDenseDeferred;
    const SiteRef site{step, layer, kind};
    const TensorDesc desc = TensorDesc::Matrix(t_moe, Hidden(), Dtype());
    Data data = host_.Input(site, p.site.Instance(), desc.numel());
    const CallContext context = flush ? Context(FusionPattern::kAllReduce, WorkspaceKind::kNone)
                                      : Context(NormPattern(), WorkspaceKind::kMoe);
    return ReduceAndCheck(site, p.exit.group, desc, data, context, p.site.Instance(), expected);
  }

  // Time-based decisions at a step's start (workload.abort_after_us): every
  // TP member's clock is gathered with the batch and the policy says whose
  // counts. Once past the deadline, one request of each batch has timed out.
  // nullopt: the gather ended the rank.
  std::optional<int64_t> TimedOutRequests() {
    const int64_t deadline = scenario_.workload.abort_after_us;
    if (deadline <= 0) return 0;
    const int64_t mine = host_.ClockUs();
    int64_t now = mine;
    if (w_.tp > 1) {
      const std::optional<std::vector<int64_t>> clocks =
          host_.AllGatherValue(mine, "scheduler batch broadcast");
      if (!clocks) return std::nullopt;
      now = host_.Policy().SchedulerClockUs(*clocks, mine);
    }
    return now >= deadline ? 1 : 0;
  }

  // One step: its batch agreed (attention DP's token all-gather), then the
  // forward pass, replayed from a captured graph when the policy picks one,
  // then the draft step.
  bool Step(int step) {
    const std::optional<int64_t> timed_out = TimedOutRequests();
    if (!timed_out) return false;
    int64_t t_dp =
        std::max<int64_t>(1, DpTokens(step, attn_dp_index_) + host_.TokenSkew() - *timed_out);
    // Attention DP: the MoE runs on the tokens of every attention-DP group;
    // the counts are agreed by an all-gather over TP.
    std::vector<int64_t> counts;
    if (w_.DpAttention()) {
      std::optional<std::vector<int64_t>> gathered = host_.AllGatherTokens(t_dp);
      if (!gathered) return false;
      counts = *std::move(gathered);
    }
    const int64_t batch = t_dp;
    std::optional<int64_t> graph;
    if (!scenario_.workload.cuda_graph_tokens.empty()) {
      const int64_t agreed =
          counts.empty() ? t_dp : *std::max_element(counts.begin(), counts.end());
      graph = host_.Policy().GraphReplayTokens(scenario_.workload.cuda_graph_tokens, agreed, t_dp);
    }
    if (graph) {
      // The graph runs at its size: every group's batch padded to it.
      t_dp = *graph;
      std::fill(counts.begin(), counts.end(), *graph);
      host_.BeginGraph(CallPhase::kReplay, *graph);
    }
    if (!Forward(step, t_dp, std::move(counts))) return false;
    if (graph) host_.EndGraph();
    return Draft(step, batch);
  }

  // The model's forward pass over a batch of `t_dp` tokens per attention-DP
  // group (`counts`: every TP member's group's count, under attention DP).
  // `counts` is released once the batch is planned: a rank waits in the
  // step's collectives holding the plan (shared), not the group's counts.
  bool Forward(int step, int64_t t_dp, std::vector<int64_t> counts) {
    int64_t t_moe = t_dp;
    const int last_stage = w_.pp - 1;
    const DispatchPolicy& policy = host_.Policy();
    const ReplicaConfig& config = host_.Config();

    // Attention DP: the policy lays the gathered rows out.
    dp_ = DpBatchPlan{};
    dp_.gather = false;
    if (w_.DpAttention()) {
      const std::vector<int64_t>* gathered = &counts;
      DpBatch batch;
      for (int g = 0; g < w_.attn_dp; ++g) {
        const size_t at = static_cast<size_t>(g * w_.attn_cp * w_.attn_tp);
        batch.tokens.push_back(at < gathered->size() ? (*gathered)[at] : gathered->back());
      }
      batch.extend = scenario_.workload.extend;
      batch.speculative = scenario_.workload.speculative;
      batch.custom_v2_max_bytes =
          config.wiring.custom.available && config.wiring.custom.generation >= 2
              ? config.wiring.custom.max_bytes
              : 0;
      batch.row_bytes = Hidden() * DTypeSize(Dtype());
      dp_ = policy.PlanDpBatch(batch, w_.attn_tp, attn_dp_index_, host_.Local());
      dp_.global_rows = std::max<int64_t>(1, dp_.global_rows);
      if (dp_.group_rows.empty()) dp_.group_rows = std::move(batch.tokens);
      group_rows_ = host_.Shared(std::exchange(dp_.group_rows, {}));
      t_moe = dp_.global_rows;
      std::vector<int64_t>().swap(counts);
    }

    if (stage_ == 0) {
      if (scenario_.workload.embedding) {
        TensorDesc desc = TensorDesc::Matrix(t_dp, Hidden(), Dtype());
        if (policy.EmbeddingNdim() == 3) {
          desc.ndim = 3;
          desc.dims = {1, t_dp, Hidden(), 0};
        }
        const GroupRole role =
            policy.EmbeddingGroup(w_, scenario_.model.embedding_attn_tp_under_dp);
        if (!Site({step, -1, SiteKind::kEmbedding}, role, desc, GroupRanks(role))) return false;
      }
    } else if (!host_.RecvActivation(rank_ - w_.tp, t_dp * Hidden())) {
      return false;
    }

    std::optional<Pending> pending;
    const TensorDesc attn_desc = TensorDesc::Matrix(t_dp, Hidden(), Dtype());
    const bool moe_cp_gather =
        w_.attn_cp > w_.moe_dp && scenario_.workload.extend && !w_.DpAttention();

    for (int layer = first_layer_; layer < end_layer_; ++layer) {
      if (pending) {
        if (!CompletePending(*pending, step, layer, t_moe, t_dp, false)) return false;
        pending.reset();
      }
      host_.Compute(t_dp, w_.attn_tp);
      // The attention output, owed over ATTN_TP, completed at the FFN input.
      if (dp_.gather) {
        if (!DpGather(step, layer, t_dp)) return false;
      } else if (!Site({step, layer, SiteKind::kAttnOut}, GroupRole::kAttnTp, attn_desc,
                       attn_group_, Context(NormPattern(), WorkspaceKind::kAttnTp))) {
        return false;
      }

      const bool moe_layer = scenario_.model.moe && layer >= scenario_.model.first_moe_layer;
      const FfnKind ffn = moe_layer ? FfnKind::kMoe : FfnKind::kDense;
      const bool last_in_stage = layer + 1 == end_layer_;
      const bool handoff = last_in_stage && stage_ != last_stage;
      int64_t rows = dp_.gather || w_.DpAttention() ? t_moe : t_dp;
      if (!moe_layer && !dp_.gather) rows = t_dp;
      const SiteRef owed{step, layer, moe_layer ? SiteKind::kMoe : SiteKind::kDenseMlp};
      // MoE-CP: on an extend batch the CP shards' rows are gathered over
      // MOE_DP (the ATTN_CP object) before the experts (layout.py:135-165).
      if (moe_layer && moe_cp_gather) {
        const SiteRef gather{step, layer, SiteKind::kMoeCpGather};
        Data data = host_.Input(gather, gather.Instance(), t_dp * Hidden());
        std::vector<int64_t> per_member(static_cast<size_t>(w_.attn_cp), t_dp);
        if (!host_.Collective(gather, RowCollective::kAllGather, GroupRole::kMoeDp, per_member,
                              Hidden(), data)) {
          return false;
        }
        rows = t_dp * w_.attn_cp;
      }
      host_.Compute(rows, moe_layer ? w_.tp : w_.attn_tp);

      ExitInputs in;
      in.ffn = ffn;
      in.terminal = last_in_stage && stage_ == last_stage;
      in.last_in_stage = last_in_stage;
      in.tokens = rows;
      in.eagle = scenario_.workload.speculative;
      in.boundary = config.boundary;
      in.padding = dp_.padding;
      in.fused_backend = config.fusion_backend != FusionBackend::kNone;
      in.norm_fusable = scenario_.model.ar_norm_fusion;
      in.norm_max_tokens = scenario_.dispatch.max_fused_norm_tokens;
      const ExitPlan exit = policy.PlanFfnExit(w_, in);
      const ExpectedRanks& expected = FfnGroup(ffn);

      const bool deferred =
          exit.kind == ExitKind::kDefer || exit.kind == ExitKind::kDeferAllReduceScatter;
      if (handoff && (deferred || (moe_layer && (exit.kind == ExitKind::kCompleteNow ||
                                                 exit.kind == ExitKind::kAllReduceThenScatter)))) {
        // The stage's last FFN completes, unfused, before its activations
        // leave: to_pp completes every owed sum (residual/batch.py:269-291);
        // a MoE exit's reductions are the policy's pipeline flush.
        ExitPlan flush = exit;
        flush.kind = w_.DpAttention() && dp_.gather ? ExitKind::kAllReduceThenScatter
                                                    : ExitKind::kCompleteNow;
        flush.reductions = moe_layer ? policy.PipelineFlushReductions(w_, exit)
                                     : std::vector<GroupRole>{exit.group};
        if (flush.kind == ExitKind::kAllReduceThenScatter) {
          if (!DpReturn(owed, flush, expected, t_dp)) return false;
        } else if (flush.reductions.empty()) {
          // Nothing flushed: the activations leave with this rank's partial
          // sum, checked as what the next stage receives.
          if (expected.ranks.size() > 1) {
            const Data data = host_.Input(owed, owed.Instance(), rows * Hidden());
            if (!host_.Check(owed, owed.Instance(), expected, data)) return false;
          }
        } else {
          const SiteRef flushed{step, layer, SiteKind::kMoeFlush};
          Data data = host_.Input(flushed, owed.Instance(), rows * Hidden());
          if (!ReduceAll(flushed, flush.reductions, rows, data)) {
            return false;
          }
          if (!host_.Check(owed, owed.Instance(), expected, data)) return false;
        }
        continue;
      }
      switch (exit.kind) {
        case ExitKind::kNothing:
          break;
        case ExitKind::kDefer:
        case ExitKind::kDeferAllReduceScatter:
          pending = Pending{exit, owed, ffn};
          break;
        case ExitKind::kCompleteNow: {
          Data data = host_.Input(owed, owed.Instance(), rows * Hidden());
          if (!ReduceAll(owed, exit.reductions, rows, data)) return false;
          if (!host_.Check(owed, owed.Instance(), expected, data)) return false;
          if (moe_layer && !ReduceReplicatedAgain(owed, rows, expected, data)) return false;
          break;
        }
        case ExitKind::kReduceScatterV:
        case ExitKind::kReduceScatter:
        case ExitKind::kAllReduceThenScatter: {
          Data kept;
          if (!DpReturn(owed, exit, expected, t_dp, &kept)) return false;
          if (moe_layer && !ReduceReplicatedAgain(owed, t_dp, expected, kept)) return false;
          break;
        }
      }
    }

    // The final norm takes no pending sum (residual/__init__.py:248-250 @
    // 0.5.23): a sum still owed after the last layer reaches it as this rank's
    // partial sum.
    if (pending && stage_ == last_stage) {
      const int64_t owed_rows =
          pending->exit.kind == ExitKind::kDeferAllReduceScatter ? t_dp : t_moe;
      const Data data = host_.Input(pending->site, pending->site.Instance(), owed_rows * Hidden());
      if (!host_.Check(pending->site, pending->site.Instance(), FfnGroup(pending->ffn), data)) {
        return false;
      }
    }

    if (stage_ != last_stage) host_.SendActivation(rank_ + w_.tp, t_dp * Hidden());
    return true;
  }

  // The speculative draft step after the forward pass (outside the target
  // model's graph: eager here).
  bool Draft(int step, int64_t t_dp) {
    if (stage_ != w_.pp - 1) return true;
    const WorkloadSpec& wl = scenario_.workload;
    const DispatchPolicy& policy = host_.Policy();
    const DraftStep draft{wl.prompt_len + step, wl.draft_tokens, wl.max_model_len};
    if (wl.speculative && scenario_.model.draft_projection &&
        !policy.SkipDraft(draft, host_.Local())) {
      const GroupRole role = policy.DraftProjectionGroup(*scenario_.model.draft_projection);
      if (!Site({step, -1, SiteKind::kDraftProjection}, role,
                TensorDesc::Matrix(t_dp, Hidden(), Dtype()), attn_group_)) {
        return false;
      }
    }
    return true;
  }

  static constexpr int kCaptureStep = -1;

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
  ExpectedRanks tp_group_;
  ExpectedRanks gather_writers_;
  bool writes_gather_ = false;
  // This step's attention-DP layout (gather false: none).
  DpBatchPlan dp_;  // its group_rows moved to group_rows_
  // Rows of each attention-DP group's slot, shared with the other ranks of
  // the step (Host::Shared).
  std::shared_ptr<const std::vector<int64_t>> group_rows_ =
      std::make_shared<const std::vector<int64_t>>();
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_REPLICA_WORKLOAD_PROGRAM_H_
