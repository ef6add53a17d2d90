#include "hw/hw_runner.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/group_coordinator.h"
#include "dispatch/workspace.h"
#include "faults/fault_injector.h"
#include "faults/fault_kinds.h"
#include "hw/hw_plan.h"
#include "hw/mpi_exchange.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/cuda/gpu_backends.h"
#include "kernels/cuda/workspace.h"
#include "kernels/protocol/element.h"
#include "sim/replica/workload_program.h"

namespace lockstep::hw {
namespace {

using Clock = std::chrono::steady_clock;
using faults::FaultInjector;
using faults::IsLocalStateFault;

static_assert(std::is_trivially_copyable_v<DecisionRecord>,
              "decision records travel between ranks as bytes");

// ---------------------------------------------------------------------------
// Every MPI wait in the run is bounded: a peer that stopped (failed, killed)
// must not hold the others forever.

// Waits for `request` until `deadline`; DeadlineExceeded names `what`.
absl::Status WaitRequest(MPI_Request* request, Clock::time_point deadline,
                         const std::string& what) {
  for (;;) {
    int done = 0;
    if (MPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      return absl::InternalError(absl::StrFormat("%s: MPI error", what));
    }
    if (done) return absl::OkStatus();
    if (Clock::now() > deadline) {
      MPI_Cancel(request);
      return absl::DeadlineExceededError(
          absl::StrFormat("%s: a peer did not take part before the watchdog's deadline", what));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// ---------------------------------------------------------------------------
// Provenance data: rank r contributes 2^(r mod 8) times a factor of 1 or 2
// (alternating by element and instance). Any sum over distinct ranks of an
// eight-rank block is then exact in bf16, fp16 and fp32, and names its
// contributors: the sum divided by the factor is the bit mask of the ranks.

constexpr int kProvenanceRanks = 8;

float Factor(uint64_t instance, int64_t i) {
  return 1.0f + static_cast<float>((instance + static_cast<uint64_t>(i)) & 1u);
}

uint32_t MaskOf(const std::vector<int>& ranks) {
  uint32_t mask = 0;
  for (int r : ranks) mask |= 1u << (r % kProvenanceRanks);
  return mask;
}

std::string RanksOfMask(uint32_t mask, int base) {
  std::vector<int> ranks;
  for (int b = 0; b < kProvenanceRanks; ++b) {
    if (mask & (1u << b)) ranks.push_back(base + b);
  }
  return absl::StrFormat("[%s]", absl::StrJoin(ranks, ","));
}

// ---------------------------------------------------------------------------
// NVLink reachability of a group's GPUs: one host, or one MNNVL clique
// (NVML fabric info: same cluster UUID and clique, registration complete).

struct FabricInfo {
  char host[64] = {};
  unsigned char cluster[16] = {};
  uint32_t clique = 0;
  int32_t state = -1;  // -1: no fabric information (NVML or the call missing)
};

// The NVML entry points the check needs, loaded at run time (no link-time
// dependency on the driver's NVML).
FabricInfo ProbeFabric(int device) {
  FabricInfo info;
  gethostname(info.host, sizeof(info.host) - 1);
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) return info;
  using InitFn = int (*)();
  using ByBusFn = int (*)(const char*, void**);
  struct NvmlFabric {  // nvmlGpuFabricInfo_t
    unsigned char cluster[16];
    int status;
    unsigned int clique;
    unsigned char state;
  };
  using FabricFn = int (*)(void*, NvmlFabric*);
  auto init = reinterpret_cast<InitFn>(dlsym(nvml, "nvmlInit_v2"));
  auto by_bus = reinterpret_cast<ByBusFn>(dlsym(nvml, "nvmlDeviceGetHandleByPciBusId_v2"));
  auto fabric = reinterpret_cast<FabricFn>(dlsym(nvml, "nvmlDeviceGetGpuFabricInfo"));
  char bus[32] = {};
  void* handle = nullptr;
  NvmlFabric f{};
  if (init != nullptr && by_bus != nullptr && fabric != nullptr && init() == 0 &&
      cudaDeviceGetPCIBusId(bus, sizeof(bus), device) == cudaSuccess && by_bus(bus, &handle) == 0 &&
      fabric(handle, &f) == 0 && f.status == 0) {
    std::memcpy(info.cluster, f.cluster, sizeof(info.cluster));
    info.clique = f.clique;
    info.state = f.state;
  }
  return info;
}

constexpr unsigned char kFabricCompleted = 3;  // NVML_GPU_FABRIC_STATE_COMPLETED

bool Reachable(const std::vector<FabricInfo>& all, std::span<const int> ranks) {
  const FabricInfo& a = all[static_cast<size_t>(ranks.front())];
  for (int r : ranks) {
    const FabricInfo& b = all[static_cast<size_t>(r)];
    if (std::strcmp(a.host, b.host) == 0) continue;
    // Other hosts: only inside one completed MNNVL clique.
    if (a.state != kFabricCompleted || b.state != kFabricCompleted || a.clique != b.clique ||
        std::memcmp(a.cluster, b.cluster, sizeof(a.cluster)) != 0) {
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------

struct Finding {
  Verdict verdict = Verdict::kClean;
  std::string summary;
  nlohmann::json details;
  // A bounded wait or the watchdog ran out: usually the consequence of
  // another rank's failure, not its cause.
  bool timed_out = false;
  int64_t at_ns = 0;  // when (steady clock: comparable between ranks of a host)
};

int Severity(Verdict v) {
  switch (v) {
    case Verdict::kClean:
      return 0;
    case Verdict::kFailStop:
      return 1;
    case Verdict::kMismatch:
      return 2;
    case Verdict::kHang:
      return 3;
    case Verdict::kDivergence:
      return 4;
    case Verdict::kWrongPeer:
      return 5;
  }
  return 0;
}

struct GroupRuntime {
  std::string name;
  GroupId id;
  int size = 1;
  MPI_Comm mpi = MPI_COMM_NULL;
  ncclComm_t nccl = nullptr;
  std::unique_ptr<cuda::GpuFusedBackend> fused;
  std::unique_ptr<cuda::GpuNcclBackend> nccl_backend;
  std::unique_ptr<GroupCoordinator> coordinator;
};

// Waits for a non-blocking NCCL communicator to finish initialising.
absl::Status WaitNcclReady(ncclComm_t comm, Clock::time_point deadline, const std::string& what) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    ncclCommGetAsyncError(comm, &state);
    if (state == ncclSuccess) return absl::OkStatus();
    if (state != ncclInProgress) {
      return absl::InternalError(absl::StrFormat("%s: %s", what, ncclGetErrorString(state)));
    }
    if (Clock::now() > deadline) {
      ncclCommAbort(comm);
      return absl::DeadlineExceededError(absl::StrFormat("%s: not ready in time", what));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

class HwRank {
 public:
  using Data = void*;  // the rank's device buffer (one call's tensor)

  HwRank(const Scenario& scenario, const ParallelLayout& layout, const DispatchPolicy& policy,
         const HwOptions& options, FaultInjector* faults, int rank)
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
  }
  ~HwRank() { Teardown(); }

  absl::Status Setup();
  void Run() {
    WorkloadProgram<HwRank> program(*this, scenario_, layout_, rank_);
    program.Run();
  }

  const std::optional<Finding>& finding() const { return finding_; }
  const std::vector<TraceEvent>& events() const { return events_; }
  const std::string& sharing() const { return sharing_; }
  // The last decision this rank took on each group object (seq == ~0: none).
  const std::vector<DecisionRecord>& last_decisions() const { return last_decisions_; }
  void set_abort_on_teardown(bool abort) { abort_on_teardown_ = abort; }

  // --- The workload host (sim/workload_program.h). ---
  bool Stopped() const { return finding_.has_value() || left_; }
  void BeginStep(int step) {
    if (faults_ == nullptr) return;
    faults_->StepLocalState(rank_, step, local_);
    if (const int64_t us = faults_->StragglerDelayUs(rank_, step); us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(us));
    }
  }
  void EndStep() {}
  int64_t TokenSkew() const { return 0; }
  const DispatchPolicy& Policy() const { return policy_; }
  const RankLocalState& Local() const { return local_; }
  void Compute(int64_t, int) {}

  std::optional<std::vector<int64_t>> AllGatherTokens(int64_t mine);
  bool RecvActivation(int from, int64_t elems);
  void SendActivation(int to, int64_t elems);
  void* Input(uint64_t instance, int64_t elems);
  bool Reduce(const SiteRef& site, GroupRole role, const TensorDesc& desc, void*& data,
              FusionPattern pattern);
  bool Check(const SiteRef& site, uint64_t instance, const ExpectedRanks& expected,
             void* const& data);

 private:
  void Fail(Verdict verdict, std::string summary, nlohmann::json details, bool timed_out = false) {
    if (finding_) return;
    finding_ = Finding{verdict, std::move(summary), std::move(details), timed_out,
                       Clock::now().time_since_epoch().count()};
  }
  Clock::time_point Deadline() const {
    return Clock::now() + std::chrono::nanoseconds(watchdog_ns_);
  }
  absl::Status SetupLocal();
  absl::Status BuildWorkspaces();
  absl::Status BuildGroups();
  // Consistency mode: the group's members compare fingerprints of the
  // decision they are about to run. False (with a finding) if they differ.
  bool ConsistentAcrossGroup(GroupRuntime& g, const DecisionRecord& record, const SiteRef& site);
  void Teardown();

  const Scenario& scenario_;
  const ParallelLayout& layout_;
  const DispatchPolicy& policy_;
  const HwOptions& options_;
  FaultInjector* faults_;
  int rank_;
  int world_;
  int device_ = 0;
  uint64_t kernel_wait_ns_ = 0;
  uint64_t watchdog_ns_ = 0;
  RankLocalState local_;
  std::vector<FabricInfo> fabric_;
  WorkspaceTags tags_;
  Workspace attn_view_, moe_view_;
  std::unique_ptr<cuda::LamportWorkspace> attn_ws_, moe_ws_;
  std::string sharing_ = "none";
  std::vector<GroupRuntime> groups_;  // by group object
  ncclComm_t world_nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  int64_t max_elems_ = 0;
  void* data_ = nullptr;      // the call's tensor
  void* residual_ = nullptr;  // zeros: residual_out = the all-reduce, exactly
  void* residual_out_ = nullptr;
  void* gamma_ = nullptr;
  std::vector<std::vector<uint8_t>> patterns_;  // [instance parity] host input bytes
  uint64_t calls_made_ = 0;
  bool last_fused_norm_ = false;    // the last call ran the fused norm (check residual_out)
  bool abort_on_teardown_ = false;  // some rank stopped: abort communicators, never wait on peers
  bool left_ = false;               // a rank_killed fault took this rank out of the job
  std::optional<Finding> finding_;
  std::vector<TraceEvent> events_;
  std::vector<DecisionRecord> last_decisions_;
  Clock::time_point start_ = Clock::now();
};

absl::Status HwRank::Setup() {
  // The local part first, then one vote, so that a rank that cannot start
  // never leaves its peers blocked in the collective part.
  absl::Status local = SetupLocal();
  int ok = local.ok() ? 1 : 0, all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (!local.ok()) return local;
  if (!all_ok) return absl::AbortedError("set-up failed on another rank (see its message)");

  // Where every rank is (host, MNNVL clique).
  FabricInfo mine = ProbeFabric(device_);
  fabric_.resize(static_cast<size_t>(world_));
  MPI_Allgather(&mine, sizeof(FabricInfo), MPI_BYTE, fabric_.data(), sizeof(FabricInfo), MPI_BYTE,
                MPI_COMM_WORLD);
  if (absl::Status s = BuildWorkspaces(); !s.ok()) return s;
  return BuildGroups();
}

absl::Status HwRank::SetupLocal() {
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
  if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess) {
    return absl::InternalError(
        absl::StrFormat("cudaSetDevice(%d): %s", device_, cuda::CudaErrorText(e)));
  }
  cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);

  tags_ = policy_.TagGroups(layout_, scenario_.dispatch.fused_backend);
  if (faults_ != nullptr) faults_->AdjustTags(layout_, tags_);
  local_.fused_backend_flag = scenario_.dispatch.fused_backend;
  local_.fp32_acc_env = false;
  if (faults_ != nullptr) faults_->InitLocalState(rank_, local_);

  // Buffers for the largest call of the workload.
  int64_t max_tokens = 1;
  for (int64_t t : scenario_.workload.tokens) max_tokens = std::max(max_tokens, t);
  for (const auto& dp : scenario_.workload.dp_tokens) {
    for (int64_t t : dp) max_tokens = std::max(max_tokens, t);
  }
  max_tokens = max_tokens * std::max(1, layout_.widths().attn_dp) + 1;
  max_elems_ = max_tokens * scenario_.model.hidden;
  const size_t bytes = static_cast<size_t>(max_elems_ * DTypeSize(scenario_.dispatch.dtype));
  for (void** p : {&data_, &residual_, &residual_out_}) {
    if (cudaMalloc(p, bytes) != cudaSuccess) {
      return absl::ResourceExhaustedError(absl::StrFormat("cannot allocate %d bytes", bytes));
    }
  }
  cudaMemset(residual_, 0, bytes);
  cudaMalloc(&gamma_, static_cast<size_t>(scenario_.model.hidden * 4));
  cudaMemset(gamma_, 0, static_cast<size_t>(scenario_.model.hidden * 4));
  absl::StatusOr<protocol::Elem> elem = cuda::ElemOf(scenario_.dispatch.dtype);
  if (!elem.ok()) return elem.status();
  for (uint64_t parity : {0u, 1u}) {
    std::vector<uint8_t> raw(bytes);
    const int esize = protocol::ElemBytes(*elem);
    const float weight = static_cast<float>(1u << (rank_ % kProvenanceRanks));
    for (int64_t i = 0; i < max_elems_; ++i) {
      const uint32_t bits = protocol::FromFloat(weight * Factor(parity, i), *elem);
      std::memcpy(raw.data() + i * esize, &bits, static_cast<size_t>(esize));
    }
    patterns_.push_back(std::move(raw));
  }
  return absl::OkStatus();
}

absl::Status HwRank::BuildWorkspaces() {
  if (!scenario_.dispatch.fused_backend) return absl::OkStatus();
  const WorkspaceCapacity capacity{scenario_.dispatch.max_tokens, scenario_.model.hidden,
                                   scenario_.dispatch.dtype};
  auto make = [&](WorkspaceKind kind, GroupRole intended, Workspace& view,
                  std::unique_ptr<cuda::LamportWorkspace>& ws) -> absl::Status {
    const SimFaultPlan::Binding binding = faults_ != nullptr
                                              ? faults_->BindWorkspaces(layout_, kind, intended)
                                              : SimFaultPlan::Binding{intended, 0};
    const GroupId id = layout_.GroupOf(binding.role, rank_);
    const auto peers = layout_.Peers(id);
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, static_cast<int>(id.value), layout_.RankInGroup(id, rank_),
                   &comm);
    if (peers.size() <= 1) {
      MPI_Comm_free(&comm);
      return absl::OkStatus();
    }
    // The buffers exist wherever the members' GPUs reach each other over
    // NVLink (one host, or one MNNVL clique). Whether the workspace counts as
    // initialised is the rendezvous vote: every member reachable and every
    // member's own allocation reported done (a rank-local allocation failure
    // is injected through that report, so that a policy reading the local
    // flag instead of the vote really enters the kernel alone).
    const int reachable = Reachable(fabric_, peers) ? 1 : 0;
    int ok = local_.workspace_allocated && reachable ? 1 : 0;
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    absl::Status status = absl::OkStatus();
    if (reachable) {
      absl::StatusOr<protocol::Elem> elem = cuda::ElemOf(scenario_.dispatch.dtype);
      MpiExchange exchange(comm);
      auto created = cuda::LamportWorkspace::CreateShared(
          {static_cast<int>(peers.size()), capacity.max_tokens, capacity.hidden, *elem}, device_,
          exchange);
      if (created.ok()) {
        ws = std::move(*created);
        sharing_ = ws->sharing();
      } else {
        status = created.status();
      }
    }
    MPI_Comm_free(&comm);
    if (!status.ok()) return status;
    view.kind = kind;
    view.group = id;
    view.world_size = static_cast<int>(peers.size());
    view.capacity = capacity;
    view.generation = binding.generation;
    view.initialized = policy_.WorkspaceInitialized(local_.workspace_allocated, all != 0);
    return absl::OkStatus();
  };
  if (absl::Status s = make(WorkspaceKind::kAttnTp, GroupRole::kAttnTp, attn_view_, attn_ws_);
      !s.ok()) {
    return s;
  }
  return make(WorkspaceKind::kMoe, MoeWorkspaceRole(layout_.widths()), moe_view_, moe_ws_);
}

absl::Status HwRank::BuildGroups() {
  ncclUniqueId id;
  if (rank_ == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // the watchdog must be able to give up on a call
  const auto setup_deadline = Clock::now() + std::chrono::seconds(120);
  ncclResult_t r = ncclCommInitRankConfig(&world_nccl_, world_, id, rank_, &config);
  if (r != ncclSuccess && r != ncclInProgress) {
    return absl::InternalError(
        absl::StrFormat("ncclCommInitRankConfig: %s", ncclGetErrorString(r)));
  }
  if (absl::Status s = WaitNcclReady(world_nccl_, setup_deadline, "NCCL world communicator");
      !s.ok()) {
    return s;
  }

  // Library availability is process-wide: voted across the TP group.
  int loaded = local_.library_loaded ? 1 : 0;
  std::vector<int> all_loaded(static_cast<size_t>(world_));
  MPI_Allgather(&loaded, 1, MPI_INT, all_loaded.data(), 1, MPI_INT, MPI_COMM_WORLD);
  bool tp_loaded = true;
  for (int peer : layout_.Peers(layout_.GroupOf(GroupRole::kTp, rank_))) {
    tp_loaded &= all_loaded[static_cast<size_t>(peer)] != 0;
  }
  const bool library_available = policy_.LibraryAvailable(local_.library_loaded, tp_loaded);

  const auto& objects = layout_.objects();
  groups_.resize(objects.size());
  last_decisions_.assign(objects.size(), DecisionRecord{});
  for (DecisionRecord& d : last_decisions_) d.seq = ~uint64_t{0};
  for (size_t o = 0; o < objects.size(); ++o) {
    GroupRuntime& g = groups_[o];
    g.id = layout_.GroupOf(objects[o].roles.front(), rank_);
    g.size = layout_.GroupSize(g.id);
    g.name = absl::StrFormat("%s %s", objects[o].name, layout_.PeersToString(g.id));
    const int key = layout_.RankInGroup(g.id, rank_);
    // Every rank takes part in every split (NCCL_SPLIT_NOCOLOR: not a member).
    const int color = g.size > 1 ? static_cast<int>(g.id.value) : NCCL_SPLIT_NOCOLOR;
    r = ncclCommSplit(world_nccl_, color, key, &g.nccl, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      return absl::InternalError(
          absl::StrFormat("ncclCommSplit for %s: %s", g.name, ncclGetErrorString(r)));
    }
    if (absl::Status s = WaitNcclReady(world_nccl_, setup_deadline, "ncclCommSplit"); !s.ok()) {
      return s;
    }
    if (g.nccl != nullptr) {
      if (absl::Status s = WaitNcclReady(g.nccl, setup_deadline, "NCCL " + g.name); !s.ok()) {
        return s;
      }
    }
    MPI_Comm_split(MPI_COMM_WORLD, g.size > 1 ? static_cast<int>(g.id.value) : MPI_UNDEFINED, key,
                   &g.mpi);

    auto before = [this](const DecisionRecord& record) -> absl::Status {
      ++calls_made_;
      if (faults_ == nullptr) return absl::OkStatus();
      return faults_->BeforeBackendCall(rank_, static_cast<int64_t>(calls_made_ - 1), record);
    };
    GroupBackends backends;
    backends.local = &local_;
    const WorkspaceKind hint = tags_.ForObject(static_cast<int>(o));
    cuda::LamportWorkspace* ws = hint == WorkspaceKind::kAttnTp ? attn_ws_.get()
                                 : hint == WorkspaceKind::kMoe  ? moe_ws_.get()
                                                                : nullptr;
    const Workspace* view = hint == WorkspaceKind::kAttnTp ? &attn_view_
                            : hint == WorkspaceKind::kMoe  ? &moe_view_
                                                           : nullptr;
    if (g.size > 1 && view != nullptr && view->world_size > 1) {
      // A workspace that did not initialise (the vote) has no buffers; the
      // dispatch core sees initialized=false and never launches on it. One
      // bound to other peers still has its own buffers, of its own group.
      g.fused = std::make_unique<cuda::GpuFusedBackend>(ws, stream_);
      g.fused->set_wait_budget_ns(kernel_wait_ns_);
      g.fused->set_before_call(before);
      g.fused->set_agreed(FusedAgreedState{scenario_.dispatch.fused_backend && library_available,
                                           view, g.id, g.size});
      backends.fused = g.fused.get();
    }
    if (g.nccl != nullptr) {
      g.nccl_backend = std::make_unique<cuda::GpuNcclBackend>(g.nccl, stream_);
      g.nccl_backend->set_watchdog_ns(watchdog_ns_);
      g.nccl_backend->set_before_call(before);
      g.nccl_backend->set_name(g.name);
      backends.nccl = g.nccl_backend.get();
    }
    g.coordinator = std::make_unique<GroupCoordinator>(objects[o].name, g.id, g.size, key, hint,
                                                       backends, &policy_);
  }
  return absl::OkStatus();
}

void HwRank::Teardown() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (GroupRuntime& g : groups_) {
    g.coordinator.reset();
    g.fused.reset();
    // A communicator the watchdog aborted is already freed.
    if (g.nccl_backend != nullptr && g.nccl_backend->aborted()) g.nccl = nullptr;
    g.nccl_backend.reset();
    if (g.nccl != nullptr) {
      // The rest end cleanly unless some rank stopped (then abort: peers
      // may never join a destroy).
      if (abort_on_teardown_ || finding_ || left_) {
        ncclCommAbort(g.nccl);
      } else {
        ncclCommDestroy(g.nccl);
      }
    }
    if (g.mpi != MPI_COMM_NULL) MPI_Comm_free(&g.mpi);
  }
  groups_.clear();
  if (world_nccl_ != nullptr) {
    if (abort_on_teardown_ || finding_ || left_) {
      ncclCommAbort(world_nccl_);
    } else {
      ncclCommDestroy(world_nccl_);
    }
    world_nccl_ = nullptr;
  }
  attn_ws_.reset();
  moe_ws_.reset();
  for (void* p : {data_, residual_, residual_out_, gamma_}) {
    if (p != nullptr) cudaFree(p);
  }
  data_ = residual_ = residual_out_ = gamma_ = nullptr;
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

std::optional<std::vector<int64_t>> HwRank::AllGatherTokens(int64_t mine) {
  GroupRuntime& tp = groups_[static_cast<size_t>(layout_.ObjectIndex(GroupRole::kTp))];
  if (tp.mpi == MPI_COMM_NULL) return std::vector<int64_t>{mine};
  std::vector<int64_t> counts(static_cast<size_t>(tp.size));
  MPI_Request request;
  MPI_Iallgather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, tp.mpi, &request);
  if (absl::Status s =
          WaitRequest(&request, Deadline(), "DP-attention token all-gather over " + tp.name);
      !s.ok()) {
    Fail(Verdict::kFailStop, absl::StrFormat("rank %d: %s", rank_, s.message()),
         {{"rank", rank_}, {"error", s.ToString()}}, true);
    return std::nullopt;
  }
  return counts;
}

bool HwRank::RecvActivation(int from, int64_t elems) {
  int64_t got = -1;
  MPI_Request request;
  MPI_Irecv(&got, 1, MPI_INT64_T, from, 7, MPI_COMM_WORLD, &request);
  if (absl::Status s =
          WaitRequest(&request, Deadline(), absl::StrFormat("activations from rank %d", from));
      !s.ok()) {
    Fail(Verdict::kFailStop, absl::StrFormat("rank %d: %s", rank_, s.message()),
         {{"rank", rank_}, {"error", s.ToString()}}, true);
    return false;
  }
  if (got != elems) {
    Fail(Verdict::kMismatch,
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

void* HwRank::Input(uint64_t instance, int64_t elems) {
  cudaSetDevice(device_);
  const int64_t esize = DTypeSize(scenario_.dispatch.dtype);
  const size_t bytes = static_cast<size_t>(std::min(elems, max_elems_) * esize);
  cudaMemcpyAsync(data_, patterns_[instance & 1u].data(), bytes, cudaMemcpyHostToDevice, stream_);
  cudaStreamSynchronize(stream_);
  return data_;
}

bool HwRank::ConsistentAcrossGroup(GroupRuntime& g, const DecisionRecord& record,
                                   const SiteRef& site) {
  std::vector<DecisionRecord> all(static_cast<size_t>(g.size));
  MPI_Request request;
  MPI_Iallgather(&record, sizeof(DecisionRecord), MPI_BYTE, all.data(), sizeof(DecisionRecord),
                 MPI_BYTE, g.mpi, &request);
  if (absl::Status s = WaitRequest(&request, Deadline(), "consistency check over " + g.name);
      !s.ok()) {
    Fail(Verdict::kFailStop,
         absl::StrFormat("rank %d at %s: %s (its peers are elsewhere in the program)", rank_,
                         site.ToString(), s.message()),
         {{"rank", rank_}, {"site", site.ToString()}}, true);
    return false;
  }
  const uint64_t fp = DecisionFingerprint(record);
  const auto peers = layout_.Peers(g.id);
  for (size_t i = 0; i < all.size(); ++i) {
    if (DecisionFingerprint(all[i]) == fp) continue;
    const std::vector<std::string> diff = DescribeDifferences(record, all[i], &layout_);
    const int other = peers[i];
    Fail(Verdict::kFailStop,
         absl::StrFormat("decisions diverged at %s on %s (call %d): rank %d chose %s, rank %d "
                         "chose %s; first differing input: %s — stopped before the call could "
                         "hang",
                         site.ToString(), g.name, record.seq, rank_,
                         BackendKindName(record.backend), other, BackendKindName(all[i].backend),
                         diff.empty() ? std::string("(none recorded)") : diff.front()),
         {{"rank", rank_},
          {"peer", other},
          {"site", site.ToString()},
          {"group", g.name},
          {"seq", record.seq},
          {"differences", diff},
          {"mine", ExplainDecision(record, &layout_)},
          {"theirs", ExplainDecision(all[i], &layout_)}});
    return false;
  }
  return true;
}

bool HwRank::Reduce(const SiteRef& site, GroupRole role, const TensorDesc& desc, void*& data,
                    FusionPattern pattern) {
  if (Stopped()) return false;
  last_fused_norm_ = false;
  if (faults_ != nullptr && faults_->KillsRank(rank_, static_cast<int64_t>(calls_made_))) {
    // The rank leaves the job here: it never makes this call or any other.
    // (The process stays to hand in its part of the report.)
    left_ = true;
    return false;
  }
  if (desc.numel() > max_elems_) {
    Fail(Verdict::kFailStop,
         absl::StrFormat("rank %d: %d elements exceed the runner's buffers", rank_, desc.numel()),
         {{"rank", rank_}});
    return false;
  }
  const int object = layout_.ObjectIndex(role);
  GroupRuntime& g = groups_[static_cast<size_t>(object)];
  Tensor tensor{desc, data};
  CallContext context;
  context.pattern = pattern;
  CallDesc call{desc, context};
  DecisionRecord record;
  CommBackend* chosen = g.coordinator->Decide(call, record);
  if (record.backend == BackendKind::kSkip) return true;
  last_decisions_[static_cast<size_t>(object)] = record;
  const int64_t begin =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  const uint64_t every = static_cast<uint64_t>(options_.consistency_every);
  if (every > 0 && g.mpi != MPI_COMM_NULL && record.seq % every == 0 &&
      !ConsistentAcrossGroup(g, record, site)) {
    return false;
  }
  last_fused_norm_ =
      record.backend == BackendKind::kFused && pattern == FusionPattern::kAllReduceResidualRmsNorm;
  if (last_fused_norm_ && g.fused != nullptr) {
    g.fused->set_norm_operands({residual_, residual_out_, gamma_, 1e-6f});
  }
  absl::Status status =
      chosen == nullptr
          ? absl::FailedPreconditionError("group '" + g.name + "' has no NCCL backend")
          : policy_.Execute(g.coordinator->backends(), *chosen, tensor, record);
  TraceEvent event;
  event.rank = rank_;
  event.site = site;
  event.object = object;
  event.group = g.id;
  event.backend = record.backend;
  event.algorithm = record.algorithm;
  event.tokens = desc.tokens();
  event.seq = record.seq;
  event.begin_ns = begin;
  event.end_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
  event.failed = !status.ok();
  events_.push_back(event);
  if (!status.ok()) {
    Fail(Verdict::kFailStop,
         absl::StrFormat("rank %d raised in %s all-reduce at %s: %s", rank_,
                         BackendKindName(record.backend), site.ToString(), status.ToString()),
         {{"rank", rank_},
          {"site", site.ToString()},
          {"group", g.name},
          {"seq", record.seq},
          {"backend", std::string(BackendKindName(record.backend))},
          {"error", status.ToString()},
          {"decision", ExplainDecision(record, &layout_)}},
         status.code() == absl::StatusCode::kDeadlineExceeded);
    return false;
  }
  return true;
}

bool HwRank::Check(const SiteRef& site, uint64_t instance, const ExpectedRanks& expected,
                   void* const& data) {
  // The reduced tensor: residual_out when the fused norm ran (residual = 0,
  // so it holds the all-reduce exactly), else the tensor itself.
  const void* src = last_fused_norm_ ? residual_out_ : data;
  // The first token's row: a reduction over the wrong peers, or a repeated
  // one, is wrong in every element, and one row is cheap enough for every
  // call. (Bitwise agreement of the rest follows from exact sums.)
  const int64_t hidden = scenario_.model.hidden;
  const absl::StatusOr<protocol::Elem> elem = cuda::ElemOf(scenario_.dispatch.dtype);
  const int esize = protocol::ElemBytes(*elem);
  std::vector<uint8_t> row(static_cast<size_t>(hidden * esize));
  cudaMemcpy(row.data(), src, row.size(), cudaMemcpyDeviceToHost);
  const uint32_t want = MaskOf(expected.ranks);
  const int base =
      expected.ranks.empty() ? 0 : expected.ranks.front() / kProvenanceRanks * kProvenanceRanks;
  for (int64_t i = 0; i < hidden; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, row.data() + i * esize, static_cast<size_t>(esize));
    const float got = protocol::ToFloat(bits, *elem) / Factor(instance, i);
    const uint32_t mask = got >= 0 && got < 65536.0f ? static_cast<uint32_t>(got) : 0xffffffffu;
    if (static_cast<float>(mask) == got && mask == want) continue;
    Fail(Verdict::kWrongPeer,
         absl::StrFormat("rank %d's reduction at %s covered ranks %s, expected %s (element %d)",
                         rank_, site.ToString(),
                         static_cast<float>(mask) == got ? RanksOfMask(mask, base)
                                                         : absl::StrFormat("(value %g)", got),
                         RanksOfMask(want, base), i),
         {{"rank", rank_}, {"site", site.ToString()}, {"expected", expected.ranks}});
    return false;
  }
  return true;
}

}  // namespace

bool HwCanInject(std::string_view kind) {
  if (faults::IsLocalStateFault(kind)) return true;
  for (std::string_view k :
       {"both_moe_groups_tagged", "tp_group_tagged", "workspace_bound_to_other_peers",
        "stale_workspace_binding", "rank_killed", "kernel_launch_failure", "illegal_address",
        "straggler"}) {
    if (k == kind) return true;
  }
  return false;
}

absl::StatusOr<HwResult> RunOnHardware(const Scenario& input, const HwOptions& options,
                                       const PolicyRegistry& registry) {
  const Scenario scenario = AsRunOnHardware(input);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(scenario.parallel);
  if (!layout.ok()) return layout.status();
  if (layout->world_size() != world) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "scenario %s needs %d ranks but the job has %d: run it as mpirun -np %d lockstep hw ...",
        scenario.name, layout->world_size(), world, layout->world_size()));
  }
  if (scenario.workload.data != DataMode::kProvenance) {
    return absl::InvalidArgumentError(
        "the hardware runner checks provenance data only (workload.data: provenance)");
  }
  for (const FaultSpec& f : scenario.faults) {
    if (!HwCanInject(f.kind)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s:%d: fault '%s' acts inside the simulator's memory model and cannot be injected on "
          "GPUs; the hardware runner injects local-state, tagging, binding, rank_killed, "
          "kernel_launch_failure, illegal_address and straggler faults",
          scenario.path, f.line, f.kind));
    }
  }
  const std::string policy_name =
      options.policy.empty() ? scenario.dispatch.policy : options.policy;
  absl::StatusOr<std::unique_ptr<DispatchPolicy>> policy = registry.Create(policy_name);
  if (!policy.ok()) return policy.status();
  std::unique_ptr<FaultInjector> faults;
  if (!scenario.faults.empty()) {
    absl::StatusOr<std::unique_ptr<FaultInjector>> injector =
        FaultInjector::Create(scenario, *layout, scenario.faults);
    if (!injector.ok()) return injector.status();
    faults = std::move(*injector);
  }

  HwResult out;
  out.world = world;
  out.result.policy = policy_name;
  std::vector<TraceEvent> events;
  std::vector<DecisionRecord> decisions;
  std::optional<Finding> finding;
  std::string sharing;
  bool left = false;
  {
    HwRank me(scenario, *layout, **policy, options, faults.get(), rank);
    absl::Status setup = me.Setup();
    // Every rank learns whether set-up worked everywhere before running.
    int ok = setup.ok() ? 1 : 0, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!setup.ok()) {
      me.set_abort_on_teardown(true);
      return setup;
    }
    if (!all_ok) {
      me.set_abort_on_teardown(true);
      return absl::AbortedError("set-up failed on another rank (see its message)");
    }
    me.Run();
    events = me.events();
    decisions = me.last_decisions();
    finding = me.finding();
    sharing = me.sharing();
    left = me.Stopped() && !finding;
    // Every rank returns (bounded waits, watchdog); then all learn whether
    // any stopped, so that nobody waits on a peer to tear down.
    int stopped = me.Stopped() ? 1 : 0, any_stopped = 0;
    MPI_Allreduce(&stopped, &any_stopped, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    me.set_abort_on_teardown(any_stopped != 0);
  }
  out.sharing = sharing;

  // Gather every rank's finding and calls on rank 0.
  nlohmann::json mine = {
      {"rank", rank},
      {"timed_out", finding && finding->timed_out},
      {"at_ns", finding ? finding->at_ns : int64_t{0}},
      {"verdict", finding ? std::string(VerdictName(finding->verdict)) : "clean"},
      {"summary", finding ? finding->summary : std::string()},
      {"details", finding ? finding->details : nlohmann::json::object()},
      {"left", left}};
  const std::string text = mine.dump();
  std::vector<uint8_t> bytes(text.begin(), text.end());
  const size_t ev_bytes = events.size() * sizeof(TraceEvent);
  static_assert(std::is_trivially_copyable_v<TraceEvent>);
  int sizes[2] = {static_cast<int>(bytes.size()), static_cast<int>(ev_bytes)};
  std::vector<int> all_sizes(static_cast<size_t>(2 * world));
  MPI_Gather(sizes, 2, MPI_INT, all_sizes.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> json_counts(static_cast<size_t>(world)), json_displs(static_cast<size_t>(world));
  std::vector<int> ev_counts(static_cast<size_t>(world)), ev_displs(static_cast<size_t>(world));
  int json_total = 0, ev_total = 0;
  for (int r = 0; r < world; ++r) {
    json_counts[static_cast<size_t>(r)] = all_sizes[static_cast<size_t>(2 * r)];
    ev_counts[static_cast<size_t>(r)] = all_sizes[static_cast<size_t>(2 * r + 1)];
    json_displs[static_cast<size_t>(r)] = json_total;
    ev_displs[static_cast<size_t>(r)] = ev_total;
    json_total += json_counts[static_cast<size_t>(r)];
    ev_total += ev_counts[static_cast<size_t>(r)];
  }
  std::vector<char> json_all(static_cast<size_t>(std::max(json_total, 1)));
  std::vector<uint8_t> ev_all(static_cast<size_t>(std::max(ev_total, 1)));
  MPI_Gatherv(bytes.data(), sizes[0], MPI_BYTE, json_all.data(), json_counts.data(),
              json_displs.data(), MPI_BYTE, 0, MPI_COMM_WORLD);
  MPI_Gatherv(events.data(), sizes[1], MPI_BYTE, ev_all.data(), ev_counts.data(), ev_displs.data(),
              MPI_BYTE, 0, MPI_COMM_WORLD);

  // Every rank's last decision per group object, for naming what diverged.
  const size_t objects = decisions.size();
  std::vector<DecisionRecord> all_decisions(rank == 0 ? objects * static_cast<size_t>(world) : 1);
  MPI_Gather(decisions.data(), static_cast<int>(objects * sizeof(DecisionRecord)), MPI_BYTE,
             all_decisions.data(), static_cast<int>(objects * sizeof(DecisionRecord)), MPI_BYTE, 0,
             MPI_COMM_WORLD);

  if (rank == 0) {
    std::vector<nlohmann::json> per_rank;
    // The verdict is the most severe finding; its summary is the root cause
    // among those: a raised error before a timeout, then the earliest.
    int worst = -1;
    auto cause_before = [&](int a, int b) {
      const nlohmann::json& ja = per_rank[static_cast<size_t>(a)];
      const nlohmann::json& jb = per_rank[static_cast<size_t>(b)];
      if (ja["timed_out"].get<bool>() != jb["timed_out"].get<bool>()) {
        return !ja["timed_out"].get<bool>();
      }
      return ja["at_ns"].get<int64_t>() < jb["at_ns"].get<int64_t>();
    };
    for (int r = 0; r < world; ++r) {
      per_rank.push_back(nlohmann::json::parse(
          std::string(json_all.data() + json_displs[static_cast<size_t>(r)],
                      static_cast<size_t>(json_counts[static_cast<size_t>(r)]))));
      const absl::StatusOr<Verdict> v = ParseVerdict(per_rank.back()["verdict"].get<std::string>());
      if (!v.ok() || *v == Verdict::kClean) continue;
      if (Severity(*v) > Severity(out.result.verdict) ||
          (Severity(*v) == Severity(out.result.verdict) && cause_before(r, worst))) {
        out.result.verdict = *v;
        worst = r;
      }
    }
    std::vector<int> stopped;
    for (int r = 0; r < world; ++r) {
      if (per_rank[static_cast<size_t>(r)]["left"].get<bool>()) stopped.push_back(r);
    }
    if (worst >= 0) {
      out.result.summary = per_rank[static_cast<size_t>(worst)]["summary"].get<std::string>();
      out.result.details = per_rank[static_cast<size_t>(worst)]["details"];
    } else if (!stopped.empty()) {
      // A rank left and nobody noticed: its peers never needed it again.
      out.result.summary = absl::StrFormat("rank(s) %s left the job; no peer waited on them",
                                           absl::StrJoin(stopped, ","));
    } else {
      out.result.summary = "every rank finished; every reduction covered its expected ranks";
    }
    // Where two ranks took their last call on a group differently, name the
    // first predicate input that differed: what turned into the stop.
    if (out.result.verdict != Verdict::kClean) {
      for (size_t o = 0; o < objects && !out.result.details.contains("diverged"); ++o) {
        for (int a = 0; a < world && !out.result.details.contains("diverged"); ++a) {
          const DecisionRecord& ra = all_decisions[static_cast<size_t>(a) * objects + o];
          if (ra.seq == ~uint64_t{0}) continue;
          for (int b = a + 1; b < world; ++b) {
            const DecisionRecord& rb = all_decisions[static_cast<size_t>(b) * objects + o];
            if (rb.seq != ra.seq || !(rb.group == ra.group) ||
                DecisionFingerprint(ra) == DecisionFingerprint(rb)) {
              continue;
            }
            const std::vector<std::string> diff = DescribeDifferences(ra, rb, &*layout);
            out.result.details["diverged"] = {{"group", layout->objects()[o].name},
                                              {"seq", ra.seq},
                                              {"ranks", {a, b}},
                                              {"backends",
                                               {std::string(BackendKindName(ra.backend)),
                                                std::string(BackendKindName(rb.backend))}},
                                              {"differences", diff}};
            out.result.summary += absl::StrFormat(
                " [ranks %d and %d decided %s call %d differently: %s vs %s; first differing "
                "input: %s]",
                a, b, layout->objects()[o].name, ra.seq, BackendKindName(ra.backend),
                BackendKindName(rb.backend), diff.empty() ? std::string("?") : diff.front());
            break;
          }
        }
      }
    }
    out.result.details["ranks"] = per_rank;
    out.result.details["workspace_sharing"] = sharing;
    out.result.trace_events.resize(static_cast<size_t>(ev_total) / sizeof(TraceEvent));
    if (ev_total > 0)
      std::memcpy(out.result.trace_events.data(), ev_all.data(), static_cast<size_t>(ev_total));
    out.result.rank_calls = out.result.trace_events.size();
  } else if (finding) {
    out.result.verdict = finding->verdict;
    out.result.summary = finding->summary;
  }
  return out;
}

}  // namespace lockstep::hw
