// All-reduce on the GPUs of one host, every contender in one run: lockstep's
// one-shot and two-shot Lamport kernels, the size rule the dispatch core
// applies, NCCL, the fused all-reduce + residual + RMSNorm against NCCL + a
// separate norm kernel, bounded against unbounded waits, and a plain SM copy
// into a peer's memory (the NVLink ceiling), and the custom all-reduce
// (GpuCustomBackend's launches) staged as an eager call stages and on
// registered inputs as a CUDA-graph replay reads them, up to SGLang's 16 MiB
// bound. One process drives every GPU;
// each measured call sequence is captured into one CUDA graph per GPU and
// replayed, timed with CUDA events (the slowest GPU's time counts).
//
// Needs two or more GPUs with peer access; elsewhere it reports why and
// exits 0. Counters: us (per call), algbw_GBps (bytes / time) and busbw_GBps
// (algbw x 2 (n - 1) / n, NCCL's convention).

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "dispatch/backend.h"
#include "dispatch/custom_launch.h"
#include "dispatch/fused_launch.h"
#include "dispatch/serving_args.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_backends.h"
#include "kernels/cuda/workspace.h"

namespace lockstep::cuda {
namespace {

constexpr int64_t kMaxBytes = int64_t{256} << 20;
constexpr int64_t kNormHidden = 7168;
constexpr int64_t kMaxNormTokens = 128;
// The custom all-reduce's size bound (SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB).
constexpr int64_t kCustomMaxBytes = int64_t{16} << 20;

struct Rig {
  int n = 0;
  std::vector<int> devices;
  std::vector<std::unique_ptr<LamportWorkspace>> ws;
  // Custom all-reduce regions (row 0 of each registers every GPU's `in`) and
  // their backends.
  std::vector<std::unique_ptr<LamportWorkspace>> custom;
  std::vector<std::unique_ptr<GpuCustomBackend>> custom_backends;
  std::vector<cudaStream_t> streams;
  std::vector<void*> in, out, residual, residual_out, gamma;
  std::vector<ncclComm_t> comms;
  std::string unavailable;
};

absl::Status Build(Rig& rig) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    return absl::UnavailableError(absl::StrFormat("needs 2 or more GPUs, found %d", count));
  }
  rig.n = std::min(count, kMaxPeers);
  for (int d = 0; d < rig.n; ++d) rig.devices.push_back(d);
  // Capacity for kMaxBytes of bf16 in rows of 512 (the rows matter only to
  // the norm variant, which uses its own shape below).
  const int64_t hidden = 512;
  auto group = LamportWorkspace::CreateLocal(
      {rig.n, kMaxBytes / 2 / hidden, hidden, protocol::Elem::kBf16}, rig.devices);
  if (!group.ok()) return group.status();
  rig.ws = std::move(*group);
  for (int d : rig.devices) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
    cudaStream_t s;
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    rig.streams.push_back(s);
    void *i, *o, *r, *ro, *g;
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&i, kMaxBytes));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&o, kMaxBytes));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&r, kMaxNormTokens * kNormHidden * 2));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&ro, kMaxNormTokens * kNormHidden * 2));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&g, kNormHidden * 2));
    // Small positive values: sums stay finite, nothing is the −0 sentinel.
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemset(i, 0x3c, kMaxBytes));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemset(r, 0x3c, kMaxNormTokens * kNormHidden * 2));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemset(g, 0x3c, kNormHidden * 2));
    rig.in.push_back(i);
    rig.out.push_back(o);
    rig.residual.push_back(r);
    rig.residual_out.push_back(ro);
    rig.gamma.push_back(g);
  }
  WorkspaceSpec custom;
  custom.world = rig.n;
  custom.custom_bytes = kCustomMaxBytes;
  // v2's push plane, as the hardware runner sizes it (GpuWiringRuntime::MakeCustom).
  custom.custom_push_bytes = CustomV2ConfigFor(90, rig.n, kCustomMaxBytes).push_slot_bytes;
  custom.graph_rows = 1;
  auto regions = LamportWorkspace::CreateLocal(custom, rig.devices);
  if (!regions.ok()) return regions.status();
  rig.custom = std::move(*regions);
  std::vector<LamportWorkspace*> members;
  std::vector<std::vector<const void*>> inputs;
  for (int d = 0; d < rig.n; ++d) {
    const auto i = static_cast<size_t>(d);
    members.push_back(rig.custom[i].get());
    inputs.push_back({rig.in[i]});
    rig.custom_backends.push_back(
        std::make_unique<GpuCustomBackend>(rig.custom[i].get(), rig.streams[i]));
  }
  LOCKSTEP_RETURN_IF_ERROR(LamportWorkspace::RegisterGraphInputsLocal(members, inputs));
  rig.comms.resize(static_cast<size_t>(rig.n));
  if (ncclResult_t r = ncclCommInitAll(rig.comms.data(), rig.n, rig.devices.data());
      r != ncclSuccess) {
    return absl::InternalError(absl::StrFormat("ncclCommInitAll: %s", ncclGetErrorString(r)));
  }
  for (int d : rig.devices) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaDeviceSynchronize());
  }
  return absl::OkStatus();
}

Rig& GetRig() {
  static Rig* rig = [] {
    auto* r = new Rig();
    if (absl::Status s = Build(*r); !s.ok()) r->unavailable = std::string(s.message());
    return r;
  }();
  return *rig;
}

struct LamportOptions {
  bool two_shot = false;
  bool norm = false;
  uint64_t budget_ns = 10ull * 1000 * 1000 * 1000;
  bool verify_clear = true;
};

LamportLaunch MakeLaunch(Rig& rig, int d, int64_t elems, const LamportOptions& o) {
  const LamportWorkspace& ws = *rig.ws[static_cast<size_t>(d)];
  LamportLaunch l;
  l.world = rig.n;
  l.elems = elems;
  l.hidden = o.norm ? kNormHidden : elems;
  l.buffer_elems = ws.buffer_elems();
  l.elem = protocol::Elem::kBf16;
  l.two_shot = o.two_shot;
  l.rms_norm = o.norm;
  l.wait_budget_ns = o.budget_ns;
  l.options.verify_clear = o.verify_clear;
  l.abort = ws.abort_device();
  l.status = ws.status();
  l.virtual_ranks = 1;
  l.blocks_per_rank = FusedGridBlocks(elems * 2);  // the dispatch core's grid rule
  LamportRank& r = l.ranks[0];
  r = ws.RankParams();
  r.input = rig.in[static_cast<size_t>(d)];
  r.output = rig.out[static_cast<size_t>(d)];
  if (o.norm) {
    r.residual = rig.residual[static_cast<size_t>(d)];
    r.residual_out = rig.residual_out[static_cast<size_t>(d)];
    r.gamma = rig.gamma[static_cast<size_t>(d)];
  }
  return l;
}

// Enqueues one call on every GPU.
using Enqueue = std::function<absl::Status()>;

// Captures `calls` calls into one graph per GPU, replays it once to warm up,
// then `replays` times under events; returns seconds per call (slowest GPU).
absl::StatusOr<double> TimeGraphs(Rig& rig, const Enqueue& enqueue, int calls, int replays) {
  std::vector<cudaGraph_t> graphs(static_cast<size_t>(rig.n));
  std::vector<cudaGraphExec_t> execs(static_cast<size_t>(rig.n));
  for (int d = 0; d < rig.n; ++d) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(
        cudaStreamBeginCapture(rig.streams[static_cast<size_t>(d)], cudaStreamCaptureModeRelaxed));
  }
  absl::Status enqueued = absl::OkStatus();
  for (int c = 0; c < calls && enqueued.ok(); ++c) enqueued = enqueue();
  for (int d = 0; d < rig.n; ++d) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(
        cudaStreamEndCapture(rig.streams[static_cast<size_t>(d)], &graphs[static_cast<size_t>(d)]));
  }
  if (!enqueued.ok()) return enqueued;
  for (int d = 0; d < rig.n; ++d) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(
        cudaGraphInstantiate(&execs[static_cast<size_t>(d)], graphs[static_cast<size_t>(d)], 0));
  }
  std::vector<cudaEvent_t> start(static_cast<size_t>(rig.n)), stop(static_cast<size_t>(rig.n));
  for (int d = 0; d < rig.n; ++d) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaEventCreate(&start[static_cast<size_t>(d)]));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaEventCreate(&stop[static_cast<size_t>(d)]));
  }
  auto replay = [&](bool timed) -> absl::Status {
    for (int d = 0; d < rig.n; ++d) {
      const auto i = static_cast<size_t>(d);
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
      if (timed) LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaEventRecord(start[i], rig.streams[i]));
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaGraphLaunch(execs[i], rig.streams[i]));
      if (timed) LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaEventRecord(stop[i], rig.streams[i]));
    }
    for (int d = 0; d < rig.n; ++d) {
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(rig.streams[static_cast<size_t>(d)]));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = replay(false); !s.ok()) return s;
  double slowest_total = 0;
  for (int r = 0; r < replays; ++r) {
    if (absl::Status s = replay(true); !s.ok()) return s;
    float slowest = 0;
    for (int d = 0; d < rig.n; ++d) {
      float ms = 0;
      LOCKSTEP_RETURN_IF_CUDA_ERROR(
          cudaEventElapsedTime(&ms, start[static_cast<size_t>(d)], stop[static_cast<size_t>(d)]));
      slowest = std::max(slowest, ms);
    }
    slowest_total += static_cast<double>(slowest);
  }
  for (int d = 0; d < rig.n; ++d) {
    const auto i = static_cast<size_t>(d);
    cudaSetDevice(d);
    cudaEventDestroy(start[i]);
    cudaEventDestroy(stop[i]);
    cudaGraphExecDestroy(execs[i]);
    cudaGraphDestroy(graphs[i]);
  }
  return slowest_total / 1e3 / replays / calls;
}

// Calls per graph: enough to amortise the launch, bounded in bytes.
int CallsFor(int64_t bytes) {
  return static_cast<int>(
      std::clamp<int64_t>((int64_t{512} << 20) / std::max<int64_t>(bytes, 1), 4, 200));
}

absl::Status CheckStatuses(Rig& rig, const LamportOptions& o, int64_t elems) {
  for (int d = 0; d < rig.n; ++d) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
    const LamportLaunch l = MakeLaunch(rig, d, elems, o);
    if (absl::Status s = CheckLamportStatus(l, rig.streams[static_cast<size_t>(d)]); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

void Report(benchmark::State& state, Rig& rig, int64_t bytes, double seconds) {
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  state.counters["us"] = seconds * 1e6;
  state.counters["algbw_GBps"] = algbw;
  state.counters["busbw_GBps"] = algbw * 2.0 * (rig.n - 1) / rig.n;
  state.counters["gpus"] = rig.n;
}

void RunTimed(benchmark::State& state, Rig& rig, int64_t bytes, const Enqueue& enqueue,
              const std::function<absl::Status()>& check = nullptr) {
  const int calls = CallsFor(bytes);
  double last = 0;
  for (auto _ : state) {
    absl::StatusOr<double> t = TimeGraphs(rig, enqueue, calls, 3);
    if (!t.ok()) {
      state.SkipWithError(std::string(t.status().message()).c_str());
      return;
    }
    last = *t;
    state.SetIterationTime(*t);
  }
  if (check) {
    if (absl::Status s = check(); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  Report(state, rig, bytes, last);
}

bool Usable(benchmark::State& state, Rig& rig) {
  if (!rig.unavailable.empty()) {
    state.SkipWithError(rig.unavailable.c_str());
    return false;
  }
  return true;
}

// Times one Lamport call of `elems` per GPU per iteration of the graph.
void TimeLamport(benchmark::State& state, Rig& rig, int64_t elems, const LamportOptions& o) {
  RunTimed(
      state, rig, elems * 2,
      [&]() -> absl::Status {
        for (int d = 0; d < rig.n; ++d) {
          LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
          if (absl::Status s =
                  LaunchLamport(MakeLaunch(rig, d, elems, o), rig.streams[static_cast<size_t>(d)]);
              !s.ok()) {
            return s;
          }
        }
        return absl::OkStatus();
      },
      [&] { return CheckStatuses(rig, o, elems); });
}

void LamportBench(benchmark::State& state, LamportOptions o) {
  Rig& rig = GetRig();
  if (!Usable(state, rig)) return;
  TimeLamport(state, rig, state.range(0) / 2, o);
}

void BM_OneShot(benchmark::State& state) { LamportBench(state, {}); }
void BM_TwoShot(benchmark::State& state) { LamportBench(state, {.two_shot = true}); }
// What the dispatch core ships: SelectFusedAlgorithm's choice for the size.
void BM_DispatchRule(benchmark::State& state) {
  const int n = GetRig().n;
  LamportOptions o;
  o.two_shot = SelectFusedAlgorithm(state.range(0), std::max(n, 2)) == Algorithm::kTwoShot;
  state.SetLabel(o.two_shot ? "two-shot" : "one-shot");
  LamportBench(state, o);
}
void BM_OneShotUnbounded(benchmark::State& state) { LamportBench(state, {.budget_ns = 0}); }
void BM_TwoShotUnbounded(benchmark::State& state) {
  LamportBench(state, {.two_shot = true, .budget_ns = 0});
}

absl::Status EnqueueNccl(Rig& rig, int64_t elems) {
  ncclGroupStart();
  for (int d = 0; d < rig.n; ++d) {
    const auto i = static_cast<size_t>(d);
    ncclAllReduce(rig.in[i], rig.out[i], static_cast<size_t>(elems), ncclBfloat16, ncclSum,
                  rig.comms[i], rig.streams[i]);
  }
  if (ncclResult_t r = ncclGroupEnd(); r != ncclSuccess) {
    return absl::InternalError(absl::StrFormat("ncclAllReduce: %s", ncclGetErrorString(r)));
  }
  return absl::OkStatus();
}

void BM_Nccl(benchmark::State& state) {
  Rig& rig = GetRig();
  if (!Usable(state, rig)) return;
  const int64_t bytes = state.range(0);
  RunTimed(state, rig, bytes, [&] { return EnqueueNccl(rig, bytes / 2); });
}

// The custom all-reduce of `bytes` on every GPU: the launch GpuCustomBackend
// makes for the dispatch core's decision (SGLang 0.5.23's v2 algorithm and
// grid for the size on H200, the reference kernel flags), eager or — a
// captured call — on the registered inputs where the algorithm reads them.
absl::StatusOr<LamportLaunch> CustomLaunch(Rig& rig, int d, int64_t bytes, bool registered) {
  CustomAgreedState agreed = ChooseCustomGeneration(
      CustomAllReduceLimits(ServingArgs{}, Platform{}), rig.n, true, true, true);
  agreed.max_bytes = kCustomMaxBytes;
  CallDesc call;
  call.tensor = TensorDesc::Matrix(1, bytes / 2, DType::kBf16);
  call.context.graph_capture = registered;
  DecisionRecord record;
  record.backend = BackendKind::kCustom;
  record.kernel_flags = kReferenceCustomKernelFlags;
  ConfigureCustomV2Launch(agreed, AgreedCustomV2Config(agreed), call, record);
  const auto i = static_cast<size_t>(d);
  return rig.custom_backends[i]->MakeLaunch(
      call.tensor, rig.in[i], rig.out[i], record,
      record.graph_inputs ? rig.custom[i]->graph_row(0) : nullptr);
}

void CustomBench(benchmark::State& state, bool registered) {
  Rig& rig = GetRig();
  if (!Usable(state, rig)) return;
  const int64_t bytes = state.range(0);
  RunTimed(
      state, rig, bytes,
      [&]() -> absl::Status {
        for (int d = 0; d < rig.n; ++d) {
          LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
          absl::StatusOr<LamportLaunch> l = CustomLaunch(rig, d, bytes, registered);
          if (!l.ok()) return l.status();
          LOCKSTEP_RETURN_IF_ERROR(LaunchLamport(*l, rig.streams[static_cast<size_t>(d)]));
        }
        return absl::OkStatus();
      },
      [&]() -> absl::Status {
        for (int d = 0; d < rig.n; ++d) {
          LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
          absl::StatusOr<LamportLaunch> l = CustomLaunch(rig, d, bytes, registered);
          if (!l.ok()) return l.status();
          LOCKSTEP_RETURN_IF_ERROR(CheckLamportStatus(*l, rig.streams[static_cast<size_t>(d)]));
        }
        return absl::OkStatus();
      });
}

void BM_Custom(benchmark::State& state) { CustomBench(state, false); }
void BM_CustomRegistered(benchmark::State& state) { CustomBench(state, true); }

void BM_FusedResidualRmsNorm(benchmark::State& state) {
  Rig& rig = GetRig();
  if (!Usable(state, rig)) return;
  TimeLamport(state, rig, state.range(0) * kNormHidden, LamportOptions{.norm = true});
}

void BM_NcclThenRmsNorm(benchmark::State& state) {
  Rig& rig = GetRig();
  if (!Usable(state, rig)) return;
  const int64_t tokens = state.range(0);
  const int64_t elems = tokens * kNormHidden;
  RunTimed(state, rig, elems * 2, [&]() -> absl::Status {
    if (absl::Status s = EnqueueNccl(rig, elems); !s.ok()) return s;
    for (int d = 0; d < rig.n; ++d) {
      const auto i = static_cast<size_t>(d);
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
      // out = allreduce; norm(out + residual) -> in (the norm output buffer).
      if (absl::Status s = LaunchResidualRmsNorm(
              rig.out[i], rig.residual[i], rig.gamma[i], rig.in[i], rig.residual_out[i], tokens,
              kNormHidden, protocol::Elem::kBf16, 1e-6f, rig.streams[i]);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  });
}

// Every GPU copies `bytes` into the next GPU's memory at once (as an
// all-reduce's pushes do): the per-GPU NVLink write ceiling.
void BM_PeerCopy(benchmark::State& state) {
  Rig& rig = GetRig();
  if (!Usable(state, rig)) return;
  const int64_t bytes = state.range(0);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  RunTimed(state, rig, bytes, [&]() -> absl::Status {
    for (int d = 0; d < rig.n; ++d) {
      const auto i = static_cast<size_t>(d);
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(d));
      void* peer = rig.out[static_cast<size_t>((d + 1) % rig.n)];
      if (absl::Status s = LaunchCopy(peer, rig.in[i], bytes, 2 * sms, rig.streams[i]); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  });
  // A copy moves `bytes` once; report that as algbw (busbw is not meaningful).
  state.counters.erase("busbw_GBps");
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes = 1024; bytes <= kMaxBytes; bytes *= 2) b->Arg(bytes);
  b->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
}
void WaitSizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes : {int64_t{1} << 10, int64_t{8} << 10, int64_t{64} << 10, int64_t{256} << 10,
                        int64_t{1} << 20, int64_t{64} << 20}) {
    b->Arg(bytes);
  }
  b->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
}
void CustomSizes(benchmark::internal::Benchmark* b) {
  for (int64_t bytes = 1024; bytes <= kCustomMaxBytes; bytes *= 2) b->Arg(bytes);
  b->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
}
void Tokens(benchmark::internal::Benchmark* b) {
  for (int64_t t = 1; t <= kMaxNormTokens; t *= 2) b->Arg(t);
  b->UseManualTime()->Iterations(3)->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Nccl)->Apply(Sizes);
BENCHMARK(BM_OneShot)->Apply(Sizes);
BENCHMARK(BM_TwoShot)->Apply(Sizes);
BENCHMARK(BM_DispatchRule)->Apply(Sizes);
BENCHMARK(BM_Custom)->Apply(CustomSizes);
BENCHMARK(BM_CustomRegistered)->Apply(CustomSizes);
BENCHMARK(BM_OneShotUnbounded)->Apply(WaitSizes);
BENCHMARK(BM_TwoShotUnbounded)->Apply(WaitSizes);
// What reading back the cleared buffer (kVerifyClear) costs.
void BM_OneShotNoVerify(benchmark::State& state) { LamportBench(state, {.verify_clear = false}); }
void BM_TwoShotNoVerify(benchmark::State& state) {
  LamportBench(state, {.two_shot = true, .verify_clear = false});
}
BENCHMARK(BM_OneShotNoVerify)->Apply(WaitSizes);
BENCHMARK(BM_TwoShotNoVerify)->Apply(WaitSizes);
BENCHMARK(BM_NcclThenRmsNorm)->Apply(Tokens);
BENCHMARK(BM_FusedResidualRmsNorm)->Apply(Tokens);
BENCHMARK(BM_PeerCopy)
    ->Arg(int64_t{64} << 20)
    ->Arg(kMaxBytes)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lockstep::cuda

BENCHMARK_MAIN();
