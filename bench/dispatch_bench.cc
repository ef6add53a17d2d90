// Nanoseconds per dispatch decision: the predicates and the backend choice of
// GroupCoordinator, the code every all-reduce of a serving engine runs.
// Goal (docs/PERFORMANCE.md, "Goals"): <= 25 ns per decision. Baseline in the same run: one
// virtual call through the backend seam, the least any dispatch can cost.

#include <benchmark/benchmark.h>

#include "dispatch/group_coordinator.h"

namespace lockstep {
namespace {

class NoopFused : public FusedAllReduceBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override { return absl::OkStatus(); }
};
class NoopCustom : public CustomAllReduceBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override { return absl::OkStatus(); }
};
class NoopNccl : public NcclBackend {
 public:
  absl::Status AllReduce(Tensor&, const DecisionRecord&) override { return absl::OkStatus(); }
};

// Rank 0 of a tp8 replica whose TP group owns an initialised workspace.
struct Tp8Rank {
  Tp8Rank() {
    ParallelConfig c;
    c.tp = 8;
    layout = *ParallelLayout::Build(c);
    const GroupId group = layout.GroupOf(GroupRole::kTp, 0);
    workspace = {WorkspaceKind::kAttnTp, group, 8, {256, 7168, DType::kBf16}, true, 0};
    fused.set_agreed({true, &workspace, group, 8});
    custom.set_agreed({true, 8 << 20, 8, true, true});
    coordinator = std::make_unique<GroupCoordinator>(
        "tp", group, 8, 0, WorkspaceKind::kAttnTp, GroupBackends{&fused, &custom, &nccl}, &policy);
  }
  ParallelLayout layout;
  Workspace workspace;
  NoopFused fused;
  NoopCustom custom;
  NoopNccl nccl;
  DispatchPolicy policy;
  std::unique_ptr<GroupCoordinator> coordinator;
};

void BM_BaselineVirtualCall(benchmark::State& state) {
  Tp8Rank rank;
  CommBackend* backend = &rank.nccl;
  benchmark::DoNotOptimize(backend);
  CallDesc call;
  DecisionRecord record;
  for (auto _ : state) {
    benchmark::DoNotOptimize(backend->CanUse(call, record));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_BaselineVirtualCall);

// Decision only (what a tracing frontend runs): `tokens` picks the outcome.
void BM_Decide(benchmark::State& state) {
  Tp8Rank rank;
  CallDesc call;
  call.tensor = TensorDesc::Matrix(state.range(0), 7168, DType::kBf16);
  DecisionRecord record;
  for (auto _ : state) {
    benchmark::DoNotOptimize(rank.coordinator->Decide(call, record));
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(BackendKindName(record.backend)));
}
// 16 tokens -> fused; 512 tokens (7 MiB, over the 256-token workspace) ->
// custom; 4096 tokens (56 MiB, over the custom 8 MiB limit) -> NCCL.
BENCHMARK(BM_Decide)->Arg(16)->Arg(512)->Arg(4096)->ArgName("tokens");

// Decision plus the call into a backend that does nothing: the full dispatch
// overhead GroupCoordinator::AllReduce adds to a collective.
void BM_DispatchAllReduce(benchmark::State& state) {
  Tp8Rank rank;
  Tensor tensor{TensorDesc::Matrix(state.range(0), 7168, DType::kBf16)};
  DecisionRecord record;
  for (auto _ : state) {
    benchmark::DoNotOptimize(rank.coordinator->AllReduce(tensor, &record));
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(BackendKindName(record.backend)));
}
BENCHMARK(BM_DispatchAllReduce)->Arg(16)->Arg(4096)->ArgName("tokens");

}  // namespace
}  // namespace lockstep

BENCHMARK_MAIN();
