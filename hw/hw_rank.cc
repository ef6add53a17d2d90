#include "hw/hw_rank.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "hw/consistency.h"
#include "hw/provenance.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/nccl_status.h"
#include "sim/replica/dispatched_call.h"
#include "sim/report/decision_log.h"

namespace lockstep::hw {

HwRank::HwRank(const Scenario& scenario, const ParallelLayout& layout, const DispatchPolicy& policy,
               const HwOptions& options, ReplicaFaults* faults, int rank)
    : scenario_(scenario),
      layout_(layout),
      policy_(policy),
      options_(options),
      faults_(faults),
      rank_(rank),
      world_(layout.world_size()) {
  const double kernel_ms =
      options.kernel_wait_ms > 0 ? options.kernel_wait_ms : scenario.timeouts.kernel_wait_ms;
  const double watchdog_ms =
      options.watchdog_ms > 0 ? options.watchdog_ms : scenario.timeouts.watchdog_ms;
  kernel_wait_ns_ = static_cast<uint64_t>(kernel_ms * 1e6);
  watchdog_ns_ = static_cast<uint64_t>(watchdog_ms * 1e6);
  if (options.keep_decision_log) {
    decision_log_.push_back(DecisionLogHeader(rank, world_, "hw", scenario.name));
  }
}

void HwRank::Fail(Verdict verdict, Detector detector, std::string summary, nlohmann::json details,
                  bool timed_out) {
  if (finding_) return;
  Finding f;
  f.verdict = verdict;
  f.detector = detector;
  f.summary = std::move(summary);
  f.details = std::move(details);
  f.rank = rank_;
  f.at_ns = Clock::now().time_since_epoch().count();
  f.timed_out = timed_out;
  finding_ = std::move(f);
}

void HwRank::FailWait(const absl::Status& status, const SiteRef* site) {
  if (finding_) return;
  finding_ = BoundedWaitFinding(rank_, site, status, Clock::now().time_since_epoch().count());
}

absl::Status HwRank::Setup() {
  // The local part first, then one vote, so that a rank that cannot start
  // never leaves its peers blocked in the collective part.
  absl::StatusOr<ReplicaConfig> resolved = ResolveReplicaConfig(scenario_, layout_, policy_);
  absl::Status local = resolved.status();
  if (resolved.ok()) replica_ = *std::move(resolved);
  if (local.ok()) local = SetupDevice();
  if (local.ok()) local = SetupBuffers();
  int ok = local.ok() ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!local.ok()) return local;
  if (!all_ok) return absl::AbortedError("set-up failed on another rank (see its message)");

  // Where every rank is (host, MNNVL clique).
  FabricInfo mine = ProbeFabric(device_);
  fabric_.resize(static_cast<size_t>(world_));
  MPI_Allgather(&mine, sizeof(FabricInfo), MPI_BYTE, fabric_.data(), sizeof(FabricInfo), MPI_BYTE,
                MPI_COMM_WORLD);

  // The world communicator, from which every group's is split.
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  ncclUniqueId id;
  if (rank_ == 0) LOCKSTEP_RETURN_IF_NCCL_ERROR(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // the watchdog must be able to give up on a call
  if (absl::Status s =
          cuda::NcclStatus(ncclCommInitRankConfig(&world_nccl_, world_, id, rank_, &config),
                           "ncclCommInitRankConfig", /*in_progress_ok=*/true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WaitNcclReady(world_nccl_, deadline, "NCCL world communicator"); !s.ok()) {
    return s;
  }

  // The groups, wired as the simulator wires them (sim/replica/group_wiring.h).
  const WiringConfig& wiring_config = replica_.wiring;
  GpuWiringRuntime::Options runtime_options;
  runtime_options.rank = rank_;
  runtime_options.device = device_;
  runtime_options.stream = stream_;
  runtime_options.world_nccl = world_nccl_;
  runtime_options.kernel_wait_ns = kernel_wait_ns_;
  runtime_options.watchdog_ns = watchdog_ns_;
  runtime_options.deadline = deadline;
  runtime_options.before_call = [this](const DecisionRecord& record) -> absl::Status {
    const CallPlace place = NextCall();
    ++calls_made_;
    if (faults_ == nullptr) return absl::OkStatus();
    return faults_->BeforeBackendCall(rank_, place, record);
  };
  GpuWiringRuntime runtime(layout_, fabric_, std::move(runtime_options), groups_);
  tags_ = ReplicaTags(layout_, policy_, wiring_config, faults_);
  InitialLocalState(wiring_config, rank_, faults_, wiring_);
  absl::Status wired =
      WireRank(wiring_config, layout_, policy_, tags_, rank_, faults_, runtime, wiring_);
  workspaces_ = std::move(runtime.workspaces());
  sharing_ = runtime.sharing();
  if (!wired.ok()) return wired;
  last_decisions_.assign(layout_.objects().size(), DecisionRecord{});
  for (DecisionRecord& d : last_decisions_) d.seq = ~uint64_t{0};
  for (size_t o = 0; o < wiring_.groups.size(); ++o) {
    wiring_.groups[o].coordinator->set_call_hook(this);
    if (groups_[o].name.empty()) {
      groups_[o].name = absl::StrFormat("%s %s", layout_.objects()[o].name,
                                        layout_.PeersToString(wiring_.groups[o].id));
    }
  }
  return absl::OkStatus();
}

absl::Status HwRank::SetupDevice() {
  // (The node split is collective: before anything can return early.)
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
  int local_rank = 0, local_size = 1;
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    return absl::FailedPreconditionError("no CUDA device is visible to this process");
  }
  if (local_size > devices) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d ranks on this node but %d GPUs: start one process per GPU", local_size, devices));
  }
  device_ = local_rank;
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(device_));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  return absl::OkStatus();
}

absl::Status HwRank::SetupBuffers() {
  // Buffers for the largest call of the workload.
  int64_t max_tokens = 1;
  for (int64_t t : scenario_.workload.tokens) max_tokens = std::max(max_tokens, t);
  for (const auto& dp : scenario_.workload.dp_tokens) {
    for (int64_t t : dp) max_tokens = std::max(max_tokens, t);
  }
  max_tokens = max_tokens * std::max(1, layout_.widths().attn_dp) + 1;
  max_elems_ = max_tokens * scenario_.model.hidden;
  const size_t bytes = static_cast<size_t>(max_elems_ * DTypeSize(scenario_.dispatch.dtype));
  for (void** p : {&data_, &scratch_, &residual_, &residual_out_}) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(p, bytes));
  }
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemset(residual_, 0, bytes));
  const size_t gamma_bytes = static_cast<size_t>(scenario_.model.hidden * 4);
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&gamma_, gamma_bytes));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemset(gamma_, 0, gamma_bytes));
  absl::StatusOr<protocol::Elem> elem = cuda::ElemOf(scenario_.dispatch.dtype);
  if (!elem.ok()) return elem.status();
  for (uint64_t parity : {0u, 1u}) {
    patterns_.push_back(ProvenanceInput(rank_, parity, max_elems_, *elem));
  }
  return absl::OkStatus();
}

void HwRank::Teardown() {
  // Teardown reports nothing: a call that fails here leaves a process that
  // is exiting anyway.
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  const bool abort = abort_on_teardown_ || finding_.has_value() || left_;
  for (size_t o = 0; o < groups_.size(); ++o) {
    GpuGroup& g = groups_[o];
    // A communicator the watchdog aborted is already freed.
    const bool aborted = g.nccl_backend != nullptr && g.nccl_backend->aborted();
    if (o < wiring_.groups.size()) {
      wiring_.groups[o] = RankWiring::Group{};  // backends and coordinator
    }
    if (g.nccl != nullptr && !aborted) {
      // The rest end cleanly unless some rank stopped (then abort: peers
      // may never join a destroy).
      if (abort) {
        ncclCommAbort(g.nccl);
      } else {
        ncclCommDestroy(g.nccl);
      }
    }
    if (g.mpi != MPI_COMM_NULL) MPI_Comm_free(&g.mpi);
  }
  groups_.clear();
  if (world_nccl_ != nullptr) {
    if (abort) {
      ncclCommAbort(world_nccl_);
    } else {
      ncclCommDestroy(world_nccl_);
    }
    world_nccl_ = nullptr;
  }
  workspaces_.clear();
  for (void* p : {data_, scratch_, residual_, residual_out_, gamma_}) {
    if (p != nullptr) cudaFree(p);
  }
  data_ = scratch_ = residual_ = residual_out_ = gamma_ = nullptr;
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

void HwRank::BeginStep(int step) {
  step_ = step;
  step_first_call_ = calls_made_;
  if (faults_ == nullptr) return;
  faults_->AtStepStart(rank_, step, wiring_.local);
  for (int64_t us : faults_->StragglerDelaysUs(rank_, step)) {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
}

int64_t HwRank::ClockUs() const {
  const auto since = std::chrono::steady_clock::now() - started_;
  return std::chrono::duration_cast<std::chrono::microseconds>(since).count() +
         wiring_.local.clock_skew_us;
}

std::optional<std::vector<int64_t>> HwRank::AllGatherTokens(int64_t mine) {
  return AllGatherValue(mine, "DP-attention token all-gather");
}

std::optional<std::vector<int64_t>> HwRank::AllGatherValue(int64_t mine, std::string_view what) {
  GpuGroup& tp = groups_[static_cast<size_t>(layout_.ObjectIndex(GroupRole::kTp))];
  if (tp.mpi == MPI_COMM_NULL) return std::vector<int64_t>{mine};
  int size = 0;
  MPI_Comm_size(tp.mpi, &size);
  std::vector<int64_t> counts(static_cast<size_t>(size));
  MPI_Request request;
  MPI_Iallgather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, tp.mpi, &request);
  if (absl::Status s = WaitMpiRequest(&request, Deadline(), std::string(what) + " over " + tp.name);
      !s.ok()) {
    FailWait(s);
    return std::nullopt;
  }
  return counts;
}

bool HwRank::RecvActivation(int from, int64_t elems) {
  int64_t got = -1;
  MPI_Request request;
  MPI_Irecv(&got, 1, MPI_INT64_T, from, 7, MPI_COMM_WORLD, &request);
  if (absl::Status s =
          WaitMpiRequest(&request, Deadline(), absl::StrFormat("activations from rank %d", from));
      !s.ok()) {
    FailWait(s);
    return false;
  }
  if (got != elems) {
    Fail(Verdict::kMismatch, Detector::kActivationSize,
         absl::StrFormat("rank %d received %d activation elements from rank %d, expected %d", rank_,
                         got, from, elems),
         {{"rank", rank_}});
    return false;
  }
  return true;
}

void HwRank::SendActivation(int to, int64_t elems) {
  MPI_Request request;
  MPI_Isend(&elems, 1, MPI_INT64_T, to, 7, MPI_COMM_WORLD, &request);
  MPI_Request_free(&request);
}

void* HwRank::Input(const SiteRef& /*at*/, uint64_t instance, int64_t elems) {
  const int64_t esize = DTypeSize(scenario_.dispatch.dtype);
  const size_t bytes = static_cast<size_t>(std::min(elems, max_elems_) * esize);
  absl::Status s = cuda::CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
  if (s.ok()) {
    s = cuda::CudaStatus(cudaMemcpyAsync(data_, patterns_[instance & 1u].data(), bytes,
                                         cudaMemcpyHostToDevice, stream_),
                         "cudaMemcpyAsync (input)");
  }
  if (s.ok()) s = cuda::CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  if (!s.ok()) {
    Fail(Verdict::kFailStop, Detector::kBackendRaised,
         absl::StrFormat("rank %d: %s", rank_, s.message()), {{"rank", rank_}});
  }
  return data_;
}

absl::Status HwRank::BeforeExecute(const DecisionRecord& record, CommBackend& chosen) {
  last_decisions_[static_cast<size_t>(object_)] = record;
  GpuGroup& g = groups_[static_cast<size_t>(object_)];
  const uint64_t every = static_cast<uint64_t>(options_.consistency_every);
  if (every > 0 && g.mpi != MPI_COMM_NULL && record.seq % every == 0) {
    if (std::optional<Finding> diverged =
            CheckDecisionConsistency(g.mpi, record, layout_, site_, g.name, rank_, Deadline())) {
      if (!finding_) finding_ = *std::move(diverged);
      hook_stopped_ = true;
      return absl::AbortedError("the group's decisions were not consistent");
    }
  }
  last_fused_norm_ = record.backend == BackendKind::kFused && record.norm_fused;
  if (last_fused_norm_) {
    // The fused backend the decision chose: the tagged one, or the one on
    // the workspace the call named.
    if (auto* fused = dynamic_cast<cuda::GpuFusedBackend*>(&chosen)) {
      fused->set_norm_operands({residual_, residual_out_, gamma_, 1e-6f});
    }
  }
  return absl::OkStatus();
}

void* HwRank::InputRows(uint64_t instance, int64_t rows, int64_t hidden, int64_t first, int64_t n) {
  // Zeros, then this rank's contribution on rows [first, first + n).
  const int64_t esize = DTypeSize(scenario_.dispatch.dtype);
  const int64_t elems = std::min(rows * hidden, max_elems_);
  absl::Status s = cuda::CudaStatus(cudaSetDevice(device_), "cudaSetDevice");
  if (s.ok()) {
    s = cuda::CudaStatus(cudaMemsetAsync(data_, 0, static_cast<size_t>(elems * esize), stream_),
                         "cudaMemsetAsync (gather buffer)");
  }
  const int64_t begin = std::min(first * hidden, elems);
  const int64_t count = std::min(n * hidden, elems - begin);
  if (s.ok() && count > 0) {
    s = cuda::CudaStatus(
        cudaMemcpyAsync(static_cast<char*>(data_) + begin * esize,
                        patterns_[instance & 1u].data() + begin * esize,
                        static_cast<size_t>(count * esize), cudaMemcpyHostToDevice, stream_),
        "cudaMemcpyAsync (gather rows)");
  }
  if (s.ok()) s = cuda::CudaStatus(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  if (!s.ok()) {
    Fail(Verdict::kFailStop, Detector::kBackendRaised,
         absl::StrFormat("rank %d: %s", rank_, s.message()), {{"rank", rank_}});
  }
  return data_;
}

void* HwRank::Rows(void* const& data, int64_t first, int64_t, int64_t hidden) const {
  return static_cast<char*>(data) + first * hidden * DTypeSize(scenario_.dispatch.dtype);
}

bool HwRank::Collective(const SiteRef& site, RowCollective op, GroupRole role,
                        const std::vector<int64_t>& rows, int64_t hidden, void*& data) {
  if (Stopped()) return false;
  GpuGroup& g = groups_[static_cast<size_t>(layout_.ObjectIndex(role))];
  if (g.nccl_backend == nullptr) return true;  // a group of one rank
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (int64_t r : rows) {
    counts.push_back(r * hidden);
    total += r * hidden;
  }
  if (total > max_elems_) {
    Fail(Verdict::kFailStop, Detector::kRunnerCapacity,
         absl::StrFormat("rank %d: %d elements exceed the runner's buffers", rank_, total),
         {{"rank", rank_}});
    return false;
  }
  const int member = layout_.RankInGroup(layout_.GroupOf(role, rank_), rank_);
  const DType dtype = scenario_.dispatch.dtype;
  absl::Status s = op == RowCollective::kReduceScatter
                       ? g.nccl_backend->ReduceScatter(data, scratch_, counts, member, dtype)
                       : g.nccl_backend->AllGather(data, scratch_, counts, member, dtype);
  if (s.ok()) {
    const int64_t out =
        op == RowCollective::kReduceScatter ? counts[static_cast<size_t>(member)] : total;
    s = cuda::CudaStatus(cudaMemcpy(data_, scratch_, static_cast<size_t>(out * DTypeSize(dtype)),
                                    cudaMemcpyDeviceToDevice),
                         "cudaMemcpy (collective output)");
  }
  if (s.code() == absl::StatusCode::kDeadlineExceeded) {
    FailWait(s, &site);
    return false;
  }
  if (!s.ok()) {
    Fail(Verdict::kFailStop, Detector::kBackendRaised,
         absl::StrFormat("rank %d at %s: %s", rank_, site.ToString(), s.message()),
         {{"rank", rank_}, {"site", site.ToString()}, {"error", s.ToString()}});
    return false;
  }
  data = data_;
  return true;
}

bool HwRank::Reduce(const SiteRef& site, GroupRole role, const TensorDesc& desc, void*& data,
                    const CallContext& context) {
  if (Stopped()) return false;
  last_fused_norm_ = false;
  site_ = site;  // where faults placed at a layer or site strike (NextCall)
  if (faults_ != nullptr && faults_->KillsRank(rank_, NextCall())) {
    // The rank leaves the job here: it never makes this call or any other.
    // (The process stays to hand in its part of the report.)
    left_ = true;
    return false;
  }
  if (desc.numel() > max_elems_) {
    Fail(Verdict::kFailStop, Detector::kRunnerCapacity,
         absl::StrFormat("rank %d: %d elements exceed the runner's buffers", rank_, desc.numel()),
         {{"rank", rank_}});
    return false;
  }
  object_ = layout_.ObjectIndex(role);
  hook_stopped_ = false;
  Tensor tensor{desc, data};
  std::optional<CallOutcome> outcome = DispatchAllReduce(
      wiring_.coordinator(object_), tensor, context, rank_, site, object_, layout_, [this] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
      });
  if (!outcome) return true;        // a group of one rank
  if (hook_stopped_) return false;  // the finding is the hook's
  events_.push_back(outcome->event);
  if (!decision_log_.empty()) {
    decision_log_.push_back(DecisionLogEntry(static_cast<int64_t>(decision_log_.size()) - 1,
                                             layout_, object_, site.ToString(), outcome->record));
  }
  if (outcome->raised) {
    if (!finding_) {
      outcome->raised->at_ns = Clock::now().time_since_epoch().count();
      finding_ = *std::move(outcome->raised);
    }
    return false;
  }
  return true;
}

bool HwRank::Check(const SiteRef& site, uint64_t instance, const ExpectedRanks& expected,
                   void* const& data) {
  // The reduced tensor: residual_out when the fused norm ran (residual = 0,
  // so it holds the all-reduce exactly), else the tensor itself. The first
  // token's row: a reduction over the wrong peers, or a repeated one, is
  // wrong in every element, and one row is cheap enough for every call.
  // (Bitwise agreement of the rest follows from exact sums.)
  const void* src = last_fused_norm_ ? residual_out_ : data;
  const absl::StatusOr<protocol::Elem> elem = cuda::ElemOf(scenario_.dispatch.dtype);
  if (!elem.ok()) return false;
  std::vector<uint8_t> row(
      static_cast<size_t>(scenario_.model.hidden * protocol::ElemBytes(*elem)));
  if (absl::Status s = cuda::CudaStatus(
          cudaMemcpy(row.data(), src, row.size(), cudaMemcpyDeviceToHost), "cudaMemcpy (check)");
      !s.ok()) {
    Fail(Verdict::kFailStop, Detector::kBackendRaised,
         absl::StrFormat("rank %d: %s", rank_, s.message()), {{"rank", rank_}});
    return false;
  }
  const std::optional<ProvenanceMismatch> bad =
      CheckProvenanceRow(row, *elem, instance, expected.ranks);
  if (!bad) return true;
  Fail(Verdict::kWrongPeer, Detector::kContributors,
       absl::StrFormat("rank %d's reduction at %s covered ranks %s, expected %s (element %d)",
                       rank_, site.ToString(), bad->covered, bad->expected, bad->element),
       {{"rank", rank_},
        {"site", site.ToString()},
        {"expected", std::vector<int>(expected.ranks.begin(), expected.ranks.end())}});
  return false;
}

}  // namespace lockstep::hw
