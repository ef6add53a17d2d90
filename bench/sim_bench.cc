// Simulator throughput: simulated rank-calls (one rank's dispatched
// all-reduce) per second, at world 8 to 16384, with the fused-kernel protocol
// and with NCCL, for three layout shapes (tp8 groups in a pipeline a few
// steps fill; the same pipeline with as many steps as stages, so that most of
// its ranks have work at once; one group as wide as the world), with the
// memory each simulated rank holds; the same collective
// sequence run by real OpenMPI processes in the same run, compared per core
// (the simulator on one core against OpenMPI's total over its processes,
// each on its own core, with `explore --jobs 1` beside the bare run) and per
// machine (`explore --jobs` on every core against OpenMPI on every core),
// with how explore scales from one core to all; and how long a hang takes to
// be reported once the last runnable rank blocks. Each row also counts the
// page faults its timed part took (first touches of memory).

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "faults/explore.h"
#include "faults/mutants.h"
#include "sim/scenario/scenario_yaml.h"
#include "sim/sim_run.h"
#include "sim/simulation.h"

// Heap accounting for the peak memory a run holds: every operator new and
// delete of this benchmark counts the usable size of its block (the fiber
// stacks, which Boost.Context takes with malloc, are not counted: 64 KiB of
// address space per rank, resident only where touched).
namespace {
std::atomic<int64_t> heap_live{0};
std::atomic<int64_t> heap_peak{0};

void* CountedAlloc(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const auto size = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t live = heap_live.fetch_add(size, std::memory_order_relaxed) + size;
  int64_t peak = heap_peak.load(std::memory_order_relaxed);
  while (live > peak && !heap_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  return p;
}
void CountedFree(void* p) {
  if (p == nullptr) return;
  heap_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void* operator new(size_t n) { return CountedAlloc(n); }
void* operator new[](size_t n) { return CountedAlloc(n); }
void operator delete(void* p) noexcept { CountedFree(p); }
void operator delete[](void* p) noexcept { CountedFree(p); }
void operator delete(void* p, size_t) noexcept { CountedFree(p); }
void operator delete[](void* p, size_t) noexcept { CountedFree(p); }

namespace lockstep {
namespace {

// Resident bytes of this process now (/proc/self/statm).
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Minor page faults this thread has taken: the first touches of memory the
// kernel had not yet given the process.
int64_t MinorFaults() {
  struct rusage usage {};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// The layout shapes the throughput rows measure.
enum class Shape {
  // tp8 groups, world / 8 pipeline stages of 8 layers, a few steps: only the
  // stages the steps have reached have work at once.
  kPipeline,
  // The same groups, one layer a stage, as many steps as stages (steps ahead
  // of the last stage wait in the mailboxes): in the middle of the run every
  // stage has a step, and the ranks with work at once are most of the world.
  kFullPipeline,
  // One TP group as wide as the world (one stage, 8 layers): every call
  // resumes every rank.
  kWide,
};

const char* ShapeLabel(Shape shape) {
  switch (shape) {
    case Shape::kPipeline:
      return "tp8 groups";
    case Shape::kFullPipeline:
      return "tp8 groups, pipeline full";
    case Shape::kWide:
      return "one group";
  }
  return "?";
}

// A dense model of hidden 64 in fp32, one token: every call is an all-reduce
// of 64 floats, in the layout `shape` names.
Scenario ThroughputScenario(int world, bool fused, int steps, Shape shape = Shape::kPipeline) {
  Scenario s;
  s.name = "throughput";
  s.hardware.name = "bench";
  // One node: SGLang refuses multi-node fusion on SM90, and the benchmark
  // measures the simulator, not the fabric.
  s.hardware.gpus_per_node = world;
  s.hardware.max_gpus = world;
  s.parallel.tp = 8;
  s.parallel.pp = world / 8;
  s.model.name = "dense64";
  s.model.hidden = 64;
  s.model.layers = (shape == Shape::kFullPipeline ? 1 : 8) * s.parallel.pp;
  s.dispatch.dtype = DType::kFp32;
  s.dispatch.max_tokens = 16;
  s.dispatch.fused_backend = fused ? FusionBackendFlag::kAuto : FusionBackendFlag::kNone;
  s.dispatch.custom_allreduce = false;
  s.workload.steps = steps;
  s.workload.tokens = {1};
  s.workload.embedding = false;
  if (shape == Shape::kWide) {
    s.parallel.tp = world;
    s.parallel.pp = 1;
    s.model.layers = 8;
    // The fused kernels serve one NVL72 domain at most: wide groups take NCCL.
    s.dispatch.fused_backend = FusionBackendFlag::kNone;
  }
  return s;
}

// One run of `s`, set-up (layout, workspaces, coordinators, fibers) excluded
// from its time, as the OpenMPI baseline times its calls and not its
// start-up; `after_execute`, when given, runs between the execution and the
// analysis. Seconds 0: the run did not set up or did not end clean.
struct TimedRun {
  double seconds = 0;
  int64_t page_faults = 0;  // minor page faults during the execution
  SimResult result;
};
TimedRun RunTimed(const Scenario& s, bool keep_decisions,
                  const std::function<void()>& after_execute = {}) {
  TimedRun out;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(s.parallel);
  if (!layout.ok()) return out;
  DispatchPolicy policy;
  SimOptions o;
  o.keep_trace = false;
  o.keep_decisions = keep_decisions;
  SimRun run(s, *layout, policy, o);
  if (!run.Setup().ok()) return out;
  const int64_t faults = MinorFaults();
  const auto start = std::chrono::steady_clock::now();
  run.Execute();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out.page_faults = MinorFaults() - faults;
  if (after_execute) after_execute();
  out.result = run.Analyze();
  if (out.result.verdict == Verdict::kClean) out.seconds = seconds;
  return out;
}

// Rank-calls per second of the run itself: set-up is excluded, since it is
// paid once per run and not per call; the verdict is checked.
// `bytes_per_rank`: the growth of resident memory by the run's end, per rank;
// `peak_heap_per_rank`: the most heap the run held at once, set-up included,
// per rank (fiber stacks apart).
double SimRankCallsPerSecond(int world, bool fused, int steps, uint64_t* calls_out,
                             Shape shape = Shape::kPipeline, int64_t* bytes_per_rank = nullptr,
                             int64_t* peak_heap_per_rank = nullptr,
                             int64_t* page_faults = nullptr) {
  const Scenario s = ThroughputScenario(world, fused, steps, shape);
  const int64_t before = ResidentBytes();
  const int64_t heap_before = heap_live.load();
  heap_peak.store(heap_before);
  const TimedRun t = RunTimed(s, /*keep_decisions=*/false, [&] {
    // What the run holds at its end (its state, fiber stacks, logs), per rank.
    if (bytes_per_rank != nullptr) *bytes_per_rank = (ResidentBytes() - before) / world;
  });
  if (peak_heap_per_rank != nullptr) *peak_heap_per_rank = (heap_peak.load() - heap_before) / world;
  if (page_faults != nullptr) *page_faults = t.page_faults;
  if (t.seconds == 0) return 0;
  *calls_out = t.result.rank_calls;
  return static_cast<double>(t.result.rank_calls) / t.seconds;
}

// One throughput row: `steps` steps of the `shape` layout at `world`, its
// rate and memory as counters.
void RunThroughputRow(benchmark::State& state, int world, bool fused, int steps, Shape shape) {
  uint64_t calls = 0;
  double rate = 0;
  int64_t bytes_per_rank = 0, peak_heap_per_rank = 0, page_faults = 0;
  for (auto _ : state) {
    rate = SimRankCallsPerSecond(world, fused, steps, &calls, shape, &bytes_per_rank,
                                 &peak_heap_per_rank, &page_faults);
  }
  if (rate == 0) {
    state.SkipWithError("the throughput scenario did not end clean");
    return;
  }
  state.counters["rank_calls_per_s"] = rate;
  state.counters["ns_per_rank_call"] = 1e9 / rate;
  state.counters["kib_per_rank"] = static_cast<double>(bytes_per_rank) / 1024.0;
  state.counters["peak_heap_kib_per_rank"] = static_cast<double>(peak_heap_per_rank) / 1024.0;
  // First touches of memory in the timed part (fiber stacks, rings, buffers),
  // per thousand rank-calls: each is a trip through the kernel, microseconds
  // on a virtual machine.
  state.counters["page_faults_per_k_rank_calls"] =
      calls == 0 ? 0.0 : static_cast<double>(page_faults) * 1000.0 / static_cast<double>(calls);
  state.SetLabel(std::string(fused ? "fused one-shot protocol" : "nccl") + ", " +
                 ShapeLabel(shape));
  state.SetItemsProcessed(static_cast<int64_t>(calls) * state.iterations());
}

void BM_SimRankCalls(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  const bool fused = state.range(1) != 0;
  const bool wide = state.range(2) != 0;
  if (wide && fused) {
    state.SkipWithError("one group wider than an NVL72 domain has no fused path");
    return;
  }
  // About 256k rank-calls per iteration at every world size (2 steps at
  // least).
  const int steps = std::max(2, 262144 / (world * (wide ? 8 : 16)));
  RunThroughputRow(state, world, fused, steps, wide ? Shape::kWide : Shape::kPipeline);
}
BENCHMARK(BM_SimRankCalls)
    ->ArgsProduct({{8, 64, 512, 4096, 16384}, {0, 1}, {0, 1}})
    ->ArgNames({"world", "fused", "wide"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// The tp8 rows with the pipeline full: as many steps as stages (at world 8,
// one stage, as many steps as make ~256k rank-calls), so that the ranks with
// work at once grow with the world, as in a layout without pipeline stages
// whose groups all run. Each rank makes two calls a step (one layer: the
// attention's and the MLP's all-reduce): world * steps * 2 rank-calls, 4.2 M
// at world 4096.
void BM_SimRankCallsFullPipeline(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  const bool fused = state.range(1) != 0;
  const int steps = std::max(world / 8, 131072 / world);
  RunThroughputRow(state, world, fused, steps, Shape::kFullPipeline);
}
BENCHMARK(BM_SimRankCallsFullPipeline)
    ->ArgsProduct({{8, 64, 512, 4096}, {0, 1}})
    ->ArgNames({"world", "fused"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

#ifdef LOCKSTEP_MPI_BASELINE
// The baseline program: the build's, or $LOCKSTEP_MPI_BASELINE (a build
// carried to another machine).
std::string BaselineProgram() {
  const char* env = std::getenv("LOCKSTEP_MPI_BASELINE");
  return env != nullptr && *env != '\0' ? env : LOCKSTEP_MPI_BASELINE;
}
#endif

// Rank-calls per second of `np` OpenMPI processes doing MPI_Allreduce of 64
// floats in groups of 8 (as the simulated tp8 groups), every process's calls
// counted; 0 when mpirun or the baseline program is not available. With a
// core per process, each process is bound to its own core.
double OpenMpiRankCallsPerSecond(int np, long calls) {
#ifdef LOCKSTEP_MPI_BASELINE
  const bool core_each = np <= static_cast<int>(std::thread::hardware_concurrency());
  const std::string command =
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun " +
      std::string(core_each ? "--bind-to core --map-by core " : "--oversubscribe ") + "-np " +
      std::to_string(np) + " " + BaselineProgram() + " " + std::to_string(calls) + " 8" +
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

// A shared host's timings move between runs (docs/PERFORMANCE.md saw 2.6x on
// the GPU host's CPU), so the comparisons with OpenMPI measure each side
// kRepeats times, interleaved, and keep its best rate: both sides get the
// same chance at a quiet moment. `*_spread` is a side's best over its worst,
// to show the noise.
constexpr int kRepeats = 3;

// The largest and smallest of the values added (rates, or times); not ok()
// when any was 0 (a failed measurement).
class Extremes {
 public:
  void Add(double value) {
    max_ = n_ == 0 ? value : std::max(max_, value);
    min_ = n_ == 0 ? value : std::min(min_, value);
    ++n_;
  }
  bool ok() const { return n_ > 0 && min_ > 0; }
  double max() const { return max_; }
  double min() const { return min_; }
  double spread() const { return ok() ? max_ / min_ : 0; }

 private:
  int n_ = 0;
  double max_ = 0, min_ = 0;
};

// Rank-calls per second of `lockstep explore --jobs <jobs>` itself
// (faults::Explore) over `seeds` seeds of the world-8 throughput scenario:
// each seed is claimed by the next free thread and pays its own set-up and
// analysis, as on the command line. Every seed makes the same calls (the
// schedule changes their order, not their number), counted by one run the
// first time; 0 if a run was not clean or the exploration failed.
double ExploreRankCallsPerSecond(int jobs, bool fused, uint64_t seeds) {
  constexpr int kSteps = 256;
  const Scenario s = ThroughputScenario(8, fused, kSteps);
  static uint64_t calls_per_seed[2] = {0, 0};  // NCCL, fused
  uint64_t& calls = calls_per_seed[fused ? 1 : 0];
  if (calls == 0) {
    const TimedRun one = RunTimed(s, /*keep_decisions=*/false);
    if (one.seconds == 0) return 0;
    calls = one.result.rank_calls;
  }
  faults::ExploreOptions options;
  options.seeds = seeds;
  options.jobs = jobs;
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  const auto start = std::chrono::steady_clock::now();
  const absl::StatusOr<faults::ExploreResult> result = faults::Explore({s}, options, registry);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok() || result->outcomes.size() != seeds) return 0;
  for (const faults::SeedOutcome& o : result->outcomes) {
    if (o.verdict != Verdict::kClean) return 0;
  }
  return static_cast<double>(calls * seeds) / seconds;
}

// The ratios the simulator is held to (docs/PERFORMANCE.md, "Goals"), world
// 8, same machine, same run. Per core: the simulator on one core against
// OpenMPI's eight processes' total divided by eight (each on its own core
// where the machine has eight). `ratio` is the old whole-job figure
// (simulator on one core against all eight processes). `explore_per_core_ratio`:
// the same with `explore --jobs 1` in place of the bare run: each seed's
// set-up and analysis included (explore keeps decision records only when it
// runs a failing seed again to explain it).
void BM_SimVersusOpenMpi(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  Extremes mpi_rates, sim_rates, explore_rates;
  uint64_t calls = 0;
  for (auto _ : state) {
    for (int i = 0; i < kRepeats; ++i) {
      mpi_rates.Add(OpenMpiRankCallsPerSecond(8, 20000));
      sim_rates.Add(SimRankCallsPerSecond(8, fused, 512, &calls));
      explore_rates.Add(ExploreRankCallsPerSecond(1, fused, 8));
    }
  }
  if (!mpi_rates.ok()) {
    state.SkipWithError("OpenMPI baseline unavailable (mpirun or the baseline program missing)");
    return;
  }
  if (!sim_rates.ok() || !explore_rates.ok()) {
    state.SkipWithError("the throughput scenario did not end clean");
    return;
  }
  const double mpi = mpi_rates.max(), sim = sim_rates.max();
  state.counters["openmpi_rank_calls_per_s"] = mpi;
  state.counters["sim_rank_calls_per_s"] = sim;
  state.counters["explore_rank_calls_per_s"] = explore_rates.max();
  state.counters["explore_per_core_ratio"] = explore_rates.max() / (mpi / 8);
  state.counters["openmpi_spread"] = mpi_rates.spread();
  state.counters["sim_spread"] = sim_rates.spread();
  state.counters["ratio"] = sim / mpi;
  state.counters["per_core_ratio"] = sim / (mpi / 8);
  state.SetLabel(fused ? "fused one-shot protocol vs MPI_Allreduce"
                       : "simulated NCCL vs MPI_Allreduce");
}
// Registered before the per-machine rows, so that a whole run measures the
// per-core goal first, as its figure of record was taken. (On the GPU host
// it once read a third lower after BM_PerMachine; five runs alternating the
// two orders on a quiet host read the same either way, so that was the
// host: docs/PERFORMANCE.md, twenty-third and twenty-fourth sessions.)
BENCHMARK(BM_SimVersusOpenMpi)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("fused")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Per machine: `explore --jobs` on every core against OpenMPI with one
// process per core (groups of 8), same run. `scaling`: explore on every core
// over explore on one (fewer seeds), measured here the same way.
void BM_PerMachine(benchmark::State& state) {
  const bool fused = state.range(0) != 0;
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int np = std::max(8, cores / 8 * 8);
  Extremes mpi_rates, sim_rates, one_core;
  for (auto _ : state) {
    for (int i = 0; i < kRepeats; ++i) {
      mpi_rates.Add(OpenMpiRankCallsPerSecond(np, 20000));
      sim_rates.Add(ExploreRankCallsPerSecond(cores, fused, 8 * static_cast<uint64_t>(cores)));
      one_core.Add(ExploreRankCallsPerSecond(1, fused, 8));
    }
  }
  if (!mpi_rates.ok() || !sim_rates.ok() || !one_core.ok()) {
    state.SkipWithError(!mpi_rates.ok() ? "OpenMPI baseline unavailable"
                                        : "a simulation was not clean");
    return;
  }
  const double mpi = mpi_rates.max(), sim = sim_rates.max();
  state.counters["cores"] = cores;
  state.counters["openmpi_processes"] = np;
  state.counters["openmpi_rank_calls_per_s"] = mpi;
  state.counters["sim_rank_calls_per_s"] = sim;
  state.counters["one_core_rank_calls_per_s"] = one_core.max();
  state.counters["scaling"] = sim / one_core.max();
  state.counters["openmpi_spread"] = mpi_rates.spread();
  state.counters["sim_spread"] = sim_rates.spread();
  state.counters["ratio"] = sim / mpi;
  state.SetLabel(fused ? "fused one-shot protocol, explore on every core"
                       : "simulated NCCL, explore on every core");
}
BENCHMARK(BM_PerMachine)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("fused")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// How `explore --jobs` scales on this machine: the NCCL path's rate with
// 1, 2, 4, 8 and 16 jobs (8 seeds a job), best of kRepeats, and that rate
// per job.
void BM_JobsScaling(benchmark::State& state) {
  const int jobs = static_cast<int>(state.range(0));
  if (jobs > std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {
    state.SkipWithError("more jobs than this machine has cores");
    return;
  }
  Extremes rates;
  for (auto _ : state) {
    for (int i = 0; i < kRepeats; ++i) {
      rates.Add(ExploreRankCallsPerSecond(jobs, /*fused=*/false, 8 * static_cast<uint64_t>(jobs)));
    }
  }
  if (!rates.ok()) {
    state.SkipWithError("a simulation was not clean");
    return;
  }
  state.counters["rank_calls_per_s"] = rates.max();
  state.counters["per_job_rank_calls_per_s"] = rates.max() / jobs;
  state.counters["spread"] = rates.spread();
}
BENCHMARK(BM_JobsScaling)
    ->RangeMultiplier(2)
    ->Range(1, 16)
    ->ArgName("jobs")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Catalogue scenarios as users explore them: `explore --jobs 1` over seeds
// of a scenario of topologies/scenarios/, on the backends SGLang 0.5.23
// picks there (the fused kernel for small batches and the custom all-reduce
// v2 for the rest on H200; MNNVL on GB200), where the rows above run one
// small NCCL or fused all-reduce. Rank-calls are the dispatched all-reduces,
// as in the rows above; what a scenario does between them (DP attention's
// reduce-scatters, gathers and token exchanges) is in their cost. They are
// counted by running each seed once before the timed exploration (a seed's
// schedule may change its calls), and every run must end clean.
// LOCKSTEP_TOPOLOGIES names the catalogue where the source tree is not at
// its build path (a bundle carried to another machine).
constexpr const char* kCatalogueRows[] = {
    "tp8-llama3-h200.yaml",
    "tp8-cuda-graphs-custom-llama3-h200.yaml",
    "dpattn-dp8-ep8-deepseek-v3-h200.yaml",
    "tp32-deepseek-v3-gb200.yaml",
};

std::string TopologiesDir() {
  if (const char* dir = std::getenv("LOCKSTEP_TOPOLOGIES")) return dir;
  return LOCKSTEP_BENCH_TOPOLOGIES;
}

void BM_CatalogueScenario(benchmark::State& state) {
  const std::string name = kCatalogueRows[state.range(0)];
  const std::string topologies = TopologiesDir();
  const absl::StatusOr<Scenario> s =
      LoadScenarioFile(topologies + "/scenarios/" + name, topologies);
  if (!s.ok()) {
    state.SkipWithError(("cannot load the scenario: " + s.status().ToString()).c_str());
    return;
  }
  constexpr uint64_t kSeeds = 256;
  const PolicyRegistry registry = faults::MakePolicyRegistry();
  uint64_t calls = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SimOptions o;
    o.seed = seed;
    const absl::StatusOr<SimResult> r = Simulate(*s, o, registry);
    if (!r.ok() || r->verdict != Verdict::kClean) {
      state.SkipWithError("a seed of the scenario did not end clean");
      return;
    }
    calls += r->rank_calls;
  }
  faults::ExploreOptions options;
  options.seeds = kSeeds;
  options.jobs = 1;
  double seconds = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    const absl::StatusOr<faults::ExploreResult> result = faults::Explore({*s}, options, registry);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!result.ok() || result->outcomes.size() != kSeeds) {
      state.SkipWithError("the exploration failed");
      return;
    }
  }
  state.counters["rank_calls_per_s"] = static_cast<double>(calls) / seconds;
  state.counters["ns_per_rank_call"] = seconds * 1e9 / static_cast<double>(calls);
  state.counters["rank_calls_per_seed"] = static_cast<double>(calls) / kSeeds;
  state.counters["seeds_per_s"] = kSeeds / seconds;
  state.SetLabel(name);
}
BENCHMARK(BM_CatalogueScenario)
    ->DenseRange(0, static_cast<int>(std::size(kCatalogueRows)) - 1)
    ->ArgName("scenario")
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Numeric and sampled data against provenance (symbolic) on one layout, same
// run: a Llama-3-70B sized dense model (hidden 8192, bf16) at TP 8 with the
// fused kernels, 4 steps of 1, 8, 16 and 300 tokens over 4 layers
// (tp8-llama3-h200's workload). `numeric_ratio` = numeric time / symbolic
// time, `sampled_ratio` = sampled time / symbolic time (goal: within 5x);
// set-up excluded, verdicts checked; each mode's time is the fastest of 5
// runs (a symbolic run is a fraction of a millisecond: one run's noise was
// a third of it on the GPU host), and the symbolic and sampled runs
// alternate, so that a slow stretch of a shared host falls on both sides of
// the ratio (run back to back, the two sides' times came from moments
// seconds apart, and three repetitions of one binary read 6.7x, 4.6x and
// 3.1x: bench/results/h200-host-cpu-2026-12-03-sampled/numeric_versus.txt).
void BM_NumericVersusSymbolic(benchmark::State& state) {
  Scenario s = ThroughputScenario(8, /*fused=*/true, 4);
  s.model.hidden = 8192;
  s.model.layers = 4;
  s.dispatch.dtype = DType::kBf16;
  s.dispatch.max_tokens = 256;
  s.workload.tokens = {1, 8, 16, 300};
  constexpr int kRuns = 5;
  // One run's time in `mode` into `times`.
  auto run = [&](DataMode mode, Extremes& times) {
    s.workload.data = mode;
    times.Add(RunTimed(s, /*keep_decisions=*/true).seconds);
  };
  double symbolic = 0, numeric = 0, sampled = 0;
  for (auto _ : state) {
    Extremes symbolic_times, sampled_times, numeric_times;
    for (int i = 0; i < kRuns; ++i) {
      run(DataMode::kProvenance, symbolic_times);
      run(DataMode::kSampled, sampled_times);
    }
    for (int i = 0; i < kRuns; ++i) run(DataMode::kNumeric, numeric_times);
    // 0: a run did not end clean.
    symbolic = symbolic_times.ok() ? symbolic_times.min() : 0.0;
    sampled = sampled_times.ok() ? sampled_times.min() : 0.0;
    numeric = numeric_times.ok() ? numeric_times.min() : 0.0;
  }
  if (symbolic == 0 || numeric == 0 || sampled == 0) {
    state.SkipWithError("a run did not end clean");
    return;
  }
  state.counters["symbolic_ms"] = symbolic * 1e3;
  state.counters["numeric_ms"] = numeric * 1e3;
  state.counters["sampled_ms"] = sampled * 1e3;
  state.counters["numeric_ratio"] = numeric / symbolic;
  state.counters["sampled_ratio"] = sampled / symbolic;
  state.SetLabel("tp8, hidden 8192, tokens 1/8/16/300, 4 layers x 4 steps");
}
BENCHMARK(BM_NumericVersusSymbolic)->Iterations(1)->Unit(benchmark::kMillisecond);

// Wall time from the moment no rank can run to the finished hang report
// (wait-for graph, first divergent decision): report_us, the mean over the
// iterations, and report_min_us, the fastest. Goal: <= 1 ms at
// world 512, <= 10 ms at 4096. teardown_us: ending the blocked ranks' fibers
// and freeing the run afterwards (the report exists before it starts).
void BM_HangReportLatency(benchmark::State& state) {
  const int world = static_cast<int>(state.range(0));
  Scenario s = ThroughputScenario(world, /*fused=*/true, 2);
  s.workload.steps = 1;
  absl::StatusOr<ParallelLayout> layout = ParallelLayout::Build(s.parallel);
  if (!layout.ok()) {
    state.SkipWithError(std::string(layout.status().message()).c_str());
    return;
  }
  DispatchPolicy policy;
  double report = 0, teardown = 0;
  double report_sum = 0;
  Extremes reports;
  for (auto _ : state) {
    std::chrono::steady_clock::time_point idle, reported;
    SimOptions o;
    o.keep_trace = false;
    Verdict verdict = Verdict::kClean;
    {
      SimRun run(s, *layout, policy, o);
      if (!run.Setup().ok()) {
        state.SkipWithError("set-up failed");
        return;
      }
      run.ranks[3].wiring.attn_workspace.initialized = false;  // rank 3 takes NCCL
      run.ctx.scheduler.set_on_idle([&idle] { idle = std::chrono::steady_clock::now(); });
      run.Execute();
      verdict = run.Analyze().verdict;
      reported = std::chrono::steady_clock::now();
    }
    const auto done = std::chrono::steady_clock::now();
    if (verdict != Verdict::kHang) {
      state.SkipWithError("expected a hang");
      return;
    }
    report = std::chrono::duration<double>(reported - idle).count();
    teardown = std::chrono::duration<double>(done - reported).count();
    state.SetIterationTime(report);
    report_sum += report;
    reports.Add(report);
  }
  // Mean and fastest over the iterations (a single one moved by 2x on a
  // shared host); teardown: the last iteration's.
  state.counters["report_us"] = report_sum / static_cast<double>(state.iterations()) * 1e6;
  state.counters["report_min_us"] = reports.min() * 1e6;
  state.counters["teardown_us"] = teardown * 1e6;
}
BENCHMARK(BM_HangReportLatency)
    ->Arg(8)
    ->Arg(512)
    ->Arg(4096)
    ->ArgName("world")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lockstep

int main(int argc, char** argv) {
  // As the `lockstep` command runs (cli/main.cc).
  lockstep::faults::RetainFreedMemoryBetweenRuns();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
