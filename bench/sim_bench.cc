// Simulator throughput: simulated rank-calls (one rank's dispatched
// all-reduce) per second, at world 8 to 4096, with the fused-kernel protocol
// and with NCCL; the same collective sequence run by real OpenMPI processes
// in the same run, and the ratio; and how long a hang takes to be reported
// once the last runnable rank blocks.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "sim/sim_run.h"
#include "sim/simulation.h"

namespace lockstep {
namespace {

// tp8 groups, world / 8 pipeline stages; a dense model of hidden 64 in fp32:
// every call is an all-reduce of 64 floats. `layers` per stage, `steps` steps.
Scenario ThroughputScenario(int world, bool fused, int steps) {
  Scenario s;
  s.name = "throughput";
  s.hardware.name = "bench";
  s.hardware.gpus_per_node = 8;
  s.hardware.max_gpus = world;
  s.parallel.tp = 8;
  s.parallel.pp = world / 8;
  s.model.name = "dense64";
  s.model.hidden = 64;
  s.model.layers = 8 * s.parallel.pp;
  s.dispatch.dtype = DType::kFp32;
  s.dispatch.max_tokens = 16;
  s.dispatch.fused_backend = fused ? FusionBackendFlag::kAuto : FusionBackendFlag::kNone;
  s.dispatch.custom_allreduce = false;
  s.workload.steps = steps;
  s.workload.tokens = {1};
  s.workload.embedding = false;
  return s;
}

// Rank-calls per second of the run itself: set-up (layout, workspaces,
// coordinators, fibers) is excluded, since it is paid once per run and not per
// call; the verdict is checked.
double SimRankCallsPerSecond(int world, bool fused, int steps, uint64_t* calls_out) {
  const Scenario s = ThroughputScenario(world, fused, steps);
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(s.parallel);
  if (!layout.ok()) return 0;
  DispatchPolicy policy;
  SimOptions o;
  o.keep_trace = false;
  o.keep_decisions = false;
  SimRun run(s, *layout, policy, o);
  if (!run.Setup().ok()) return 0;
  const auto start = std::chrono::steady_clock::now();
  run.Execute();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const SimResult r = run.Analyze();
  if (r.verdict != Verdict::kClean) return 0;
  *calls_out = r.rank_calls;
  return static_cast<double>(r.rank_calls) / seconds;
}

void BM_SimRankCalls(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  const bool fused = state.range(1) != 0;
  // About 256k rank-calls per iteration at every world size.
  const int steps = std::max(2, 262144 / (world * 16));
  uint64_t calls = 0;
  double rate = 0;
  for (auto _ : state) rate = SimRankCallsPerSecond(world, fused, steps, &calls);
  if (rate == 0) state.SkipWithError("the throughput scenario did not end clean");
  state.counters["rank_calls_per_s"] = rate;
  state.counters["ns_per_rank_call"] = 1e9 / rate;
  state.SetLabel(fused ? "fused one-shot protocol" : "nccl");
  state.SetItemsProcessed(static_cast<int64_t>(calls) * state.iterations());
}
BENCHMARK(BM_SimRankCalls)
    ->ArgsProduct({{8, 64, 512, 4096}, {0, 1}})
    ->ArgNames({"world", "fused"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// Rank-calls per second of `np` OpenMPI processes doing MPI_Allreduce of 64
// floats; 0 when mpirun or the baseline program is not available.
double OpenMpiRankCallsPerSecond(int np, long calls) {
#ifdef LOCKSTEP_MPI_BASELINE
  const std::string command =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
      "mpirun --oversubscribe -np " +
      std::to_string(np) + " " + LOCKSTEP_MPI_BASELINE + " " + std::to_string(calls) +
      " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return 0;
  double rate = 0;
  char line[256];
  while (std::fgets(line, sizeof line, pipe.get()) != nullptr) {
    std::sscanf(line, "rank_calls_per_s %lf", &rate);
  }
  return rate;
#else
  (void)np;
  (void)calls;
  return 0;
#endif
}

// The ratio the simulator is held to (docs/PERFORMANCE.md, "Goals"): simulated rank-calls per
// second over OpenMPI's, same machine, same run, world 8.
void BM_SimVersusOpenMpi(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  double mpi = 0, sim = 0;
  uint64_t calls = 0;
  for (auto _ : state) {
    mpi = OpenMpiRankCallsPerSecond(8, 20000);
    sim = SimRankCallsPerSecond(8, fused, 512, &calls);
  }
  if (mpi == 0) {
    state.SkipWithError("OpenMPI baseline unavailable (mpirun or the baseline program missing)");
    return;
  }
  state.counters["openmpi_rank_calls_per_s"] = mpi;
  state.counters["sim_rank_calls_per_s"] = sim;
  state.counters["ratio"] = sim / mpi;
  state.SetLabel(fused ? "fused one-shot protocol vs MPI_Allreduce"
                       : "simulated NCCL vs MPI_Allreduce");
}
BENCHMARK(BM_SimVersusOpenMpi)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("fused")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Wall time from the moment no rank can run to the finished hang report
// (wait-for graph, first divergent decision). Goal: <= 1 ms.
void BM_HangReportLatency(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  Scenario s = ThroughputScenario(world, /*fused=*/true, 2);
  s.workload.steps = 1;
  double seconds = 0;
  for (auto _ : state) {
    std::chrono::steady_clock::time_point idle;
    SimOptions o;
    o.keep_trace = false;
    o.customize = [&idle](SimRun& run) {
      run.ranks[3].wiring.attn_workspace.initialized = false;  // rank 3 takes NCCL
      run.ctx.scheduler.set_on_idle([&idle] { idle = std::chrono::steady_clock::now(); });
    };
    PolicyRegistry registry;
    absl::StatusOr<SimResult> r = Simulate(s, o, registry);
    const auto done = std::chrono::steady_clock::now();
    if (!r.ok() || r->verdict != Verdict::kHang) {
      state.SkipWithError("expected a hang");
      return;
    }
    seconds = std::chrono::duration<double>(done - idle).count();
    state.SetIterationTime(seconds);
  }
  state.counters["report_us"] = seconds * 1e6;
}
BENCHMARK(BM_HangReportLatency)
    ->Arg(8)
    ->Arg(512)
    ->ArgName("world")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lockstep

BENCHMARK_MAIN();
