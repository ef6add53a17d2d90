// The custom all-reduce on GPUs (kernels/protocol/block_barrier.h run by
// GpuCustomBackend's launches) with 2, 4 and 8 virtual ranks on one GPU (one
// cooperative launch: every rank's blocks resident together): bit-exact
// against a host reference (rank-order fp32 sums, SGLang's reduce_vec), many
// calls of changing size and grid (the barrier epochs), CUDA-graph capture
// and replay on registered inputs, a rank that never launches named by the
// bounded wait, the host abort word, and the registration's count check.

#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "dispatch/custom_launch.h"
#include "dispatch/fused_launch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/cuda/gpu_backends.h"
#include "kernels/cuda/workspace.h"
#include "kernels/protocol/element.h"
#include "tests/gpu/element_bits.h"
#include "tests/gpu/gpu_test_environment.h"

namespace lockstep::cuda {
namespace {

using protocol::Elem;
using ::testing::HasSubstr;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

DType DTypeOf(Elem e) {
  return e == Elem::kBf16 ? DType::kBf16 : e == Elem::kFp16 ? DType::kFp16 : DType::kFp32;
}

// One custom all-reduce group of virtual ranks on device 0: its regions, one
// GpuCustomBackend per rank (whose MakeLaunch builds each rank's part of the
// launch), and `inputs_per_rank` input/output buffer pairs per rank.
class CustomGroup {
 public:
  CustomGroup(int world, int64_t max_bytes, Elem elem, int inputs_per_rank = 1,
              int64_t graph_rows = 0, int64_t push_bytes = 0)
      : world_(world), max_bytes_(max_bytes), elem_(elem), esize_(protocol::ElemBytes(elem)) {
    WorkspaceSpec spec;
    spec.world = world;
    spec.elem = elem;
    spec.custom_bytes = max_bytes;
    spec.graph_rows = graph_rows;
    spec.custom_push_bytes = push_bytes;
    std::vector<int> devices(static_cast<size_t>(world), 0);
    auto group = LamportWorkspace::CreateLocal(spec, devices);
    EXPECT_TRUE(group.ok()) << group.status();
    if (group.ok()) regions_ = std::move(*group);
    for (auto& r : regions_)
      backends_.push_back(std::make_unique<GpuCustomBackend>(r.get(), nullptr));
    // One status word per virtual rank (a region has its own rank's only).
    cudaMalloc(&status_, sizeof(LamportStatus) * kMaxVirtualRanks);
    cudaMemset(status_, 0, sizeof(LamportStatus) * kMaxVirtualRanks);
    inputs_.resize(static_cast<size_t>(world));
    outputs_.resize(static_cast<size_t>(world));
    for (int r = 0; r < world; ++r) {
      for (int i = 0; i < inputs_per_rank; ++i) {
        void *in = nullptr, *out = nullptr;
        cudaMalloc(&in, static_cast<size_t>(max_bytes));
        cudaMalloc(&out, static_cast<size_t>(max_bytes));
        inputs_[static_cast<size_t>(r)].push_back(in);
        outputs_[static_cast<size_t>(r)].push_back(out);
      }
    }
  }
  ~CustomGroup() {
    cudaFree(status_);
    for (auto& v : inputs_) {
      for (void* p : v) cudaFree(p);
    }
    for (auto& v : outputs_) {
      for (void* p : v) cudaFree(p);
    }
  }

  bool ok() const { return static_cast<int>(regions_.size()) == world_; }
  LamportWorkspace& region(int r) { return *regions_[static_cast<size_t>(r)]; }
  void* input(int r, int i = 0) const {
    return inputs_[static_cast<size_t>(r)][static_cast<size_t>(i)];
  }
  void* output(int r, int i = 0) const {
    return outputs_[static_cast<size_t>(r)][static_cast<size_t>(i)];
  }

  struct Call {
    int64_t elems = 0;
    int input = 0;            // which input/output pair
    bool in_place = false;    // reduce into the input (the backend's AllReduce path)
    int launched_ranks = -1;  // -1: all
    int blocks = 0;           // 0: the dispatch core's CustomGridBlocks
    uint64_t budget_ns = 2'000'000'000;
    // Registered graph inputs: each rank reads through row `graph_row` of its
    // registration table (-1: stage).
    int64_t graph_row = -1;
    // v2's algorithms (kernels/protocol/custom_v2.h); kNone: v1's staged one.
    Algorithm algorithm = Algorithm::kNone;
  };
  // The launch of `c` over the virtual ranks: each rank's part from its own
  // backend's MakeLaunch, merged.
  absl::StatusOr<LamportLaunch> MakeLaunch(const Call& c) {
    DecisionRecord record;
    record.backend = BackendKind::kCustom;
    record.kernel_flags = kReferenceCustomKernelFlags;
    const TensorDesc desc = TensorDesc::Matrix(1, c.elems, DTypeOf(elem_));
    record.blocks = c.blocks > 0 ? c.blocks : CustomGridBlocks(desc.bytes());
    record.algorithm = c.algorithm;
    LamportLaunch merged;
    const int launched = c.launched_ranks < 0 ? world_ : c.launched_ranks;
    for (int r = 0; r < launched; ++r) {
      backends_[static_cast<size_t>(r)]->set_wait_budget_ns(c.budget_ns);
      void* out = c.in_place ? input(r, c.input) : output(r, c.input);
      absl::StatusOr<LamportLaunch> l = backends_[static_cast<size_t>(r)]->MakeLaunch(
          desc, input(r, c.input), out, record,
          c.graph_row < 0 ? nullptr : region(r).graph_row(c.graph_row));
      if (!l.ok()) return l.status();
      if (r == 0) merged = *l;
      merged.ranks[r] = l->ranks[0];
    }
    // The group's status words, and rank 0's abort word for the launch.
    merged.status = status_;
    merged.virtual_ranks = launched;
    return merged;
  }
  absl::Status Run(const Call& c) {
    absl::StatusOr<LamportLaunch> l = MakeLaunch(c);
    if (!l.ok()) return l.status();
    if (absl::Status s = LaunchLamport(*l, nullptr); !s.ok()) return s;
    absl::Status s = CheckLamportStatus(*l, nullptr);
    cudaMemset(status_, 0, sizeof(LamportStatus) * kMaxVirtualRanks);
    return s;
  }

  void Upload(void* dst, const std::vector<uint32_t>& bits) const { UploadBits(dst, bits, esize_); }

  std::vector<uint32_t> Download(const void* src, int64_t elems) const {
    return DownloadBits(src, elems, esize_);
  }

 private:
  int world_;
  int64_t max_bytes_;
  Elem elem_;
  int esize_;
  std::vector<std::unique_ptr<LamportWorkspace>> regions_;
  std::vector<std::unique_ptr<GpuCustomBackend>> backends_;
  std::vector<std::vector<void*>> inputs_, outputs_;
  LamportStatus* status_ = nullptr;
};

// The host reference: every element summed in rank order in fp32, rounded
// once to the element type (SGLang 0.5.23 vec.cuh reduce_vec, kFP32Acc).
std::vector<uint32_t> HostReference(const std::vector<std::vector<uint32_t>>& inputs, Elem e) {
  std::vector<uint32_t> out(inputs.front().size());
  for (size_t i = 0; i < out.size(); ++i) {
    float s = protocol::ToFloat(inputs[0][i], e);
    for (size_t r = 1; r < inputs.size(); ++r) s += protocol::ToFloat(inputs[r][i], e);
    out[i] = protocol::FromFloat(s, e);
  }
  return out;
}

// Fills every rank's input pair `input` with fresh values and returns them.
std::vector<std::vector<uint32_t>> FillInputs(CustomGroup& g, int world, int64_t elems, Elem e,
                                              uint32_t seed, int input = 0) {
  std::vector<std::vector<uint32_t>> inputs;
  for (int r = 0; r < world; ++r) {
    inputs.push_back(RandomBits(elems, e, seed * 977u + static_cast<uint32_t>(r)));
    g.Upload(g.input(r, input), inputs.back());
  }
  return inputs;
}

// 2shot_push remaps the +0 32-bit words of its sums to the marker's -0
// (LamportTrait::clear_pos_zero) before anyone stores them.
void RemapZeroWords(std::vector<uint32_t>& bits, Elem e) {
  if (e == Elem::kFp32) {
    for (uint32_t& b : bits) b = b == 0 ? 0x80000000u : b;
    return;
  }
  for (size_t i = 0; i + 1 < bits.size(); i += 2) {
    if (bits[i] == 0 && bits[i + 1] == 0) bits[i] = 0x8000u;
  }
}

void ExpectBitExact(CustomGroup& g, int world, const std::vector<std::vector<uint32_t>>& inputs,
                    int64_t elems, Elem e, bool in_place, int input, const std::string& what,
                    bool remap_zero_words = false) {
  std::vector<uint32_t> want = HostReference(inputs, e);
  if (remap_zero_words) RemapZeroWords(want, e);
  for (int r = 0; r < world; ++r) {
    const std::vector<uint32_t> got =
        g.Download(in_place ? g.input(r, input) : g.output(r, input), elems);
    for (int64_t i = 0; i < elems; ++i) {
      ASSERT_EQ(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)])
          << what << ": rank " << r << " element " << i << " of " << elems;
    }
  }
}

struct Case {
  int world;
  Elem elem;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "world " << c.world << ", elem " << static_cast<int>(c.elem);
}

class CustomKernelTest : public ::testing::TestWithParam<Case> {};

TEST_P(CustomKernelTest, ReducesBitExactlyAgainstTheHostReferenceOnEveryRank) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const Case c = GetParam();
  const int64_t max_bytes = int64_t{1} << 20;
  CustomGroup g(c.world, max_bytes, c.elem);
  ASSERT_TRUE(g.ok());
  const int64_t vec = 16 / protocol::ElemBytes(c.elem);
  uint32_t seed = 1;
  // One vector, a partial grid, a block's worth, several blocks, the bound.
  for (const int64_t elems :
       {vec, 3 * vec, 512 * vec, 512 * vec * 5 + vec, max_bytes / protocol::ElemBytes(c.elem)}) {
    for (const bool in_place : {false, true}) {
      const auto inputs = FillInputs(g, c.world, elems, c.elem, seed++);
      CustomGroup::Call call;
      call.elems = elems;
      call.in_place = in_place;
      const absl::Status s = g.Run(call);
      ASSERT_TRUE(s.ok()) << s;
      ExpectBitExact(g, c.world, inputs, elems, c.elem, in_place, 0,
                     absl::StrFormat("%d elements%s", elems, in_place ? " in place" : ""));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(VirtualRanks, CustomKernelTest,
                         ::testing::Values(Case{2, Elem::kBf16}, Case{4, Elem::kBf16},
                                           Case{8, Elem::kBf16}, Case{8, Elem::kFp16},
                                           Case{4, Elem::kFp32}));

TEST(CustomKernelEdgeTest, ManyCallsOfChangingSizeAndGridKeepTheBarrierEpochs) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const int world = 4;
  CustomGroup g(world, int64_t{256} << 10, Elem::kBf16);
  ASSERT_TRUE(g.ok());
  std::mt19937 gen(11);
  for (int call_index = 0; call_index < 60; ++call_index) {
    // Sizes and grids change from call to call (alike on every rank, as the
    // dispatch core decides them), so blocks meet flags of different ages.
    const int64_t elems = 8 * (1 + static_cast<int64_t>(gen() % 16000));
    const int blocks = 1 + static_cast<int>(gen() % 36);
    const auto inputs =
        FillInputs(g, world, elems, Elem::kBf16, 100u + static_cast<uint32_t>(call_index));
    CustomGroup::Call call;
    call.elems = elems;
    call.blocks = blocks;
    const absl::Status s = g.Run(call);
    ASSERT_TRUE(s.ok()) << "call " << call_index << ": " << s;
    ExpectBitExact(g, world, inputs, elems, Elem::kBf16, false, 0,
                   absl::StrFormat("call %d (%d elements, %d blocks)", call_index, elems, blocks));
  }
}

// SGLang captures each custom all-reduce into the graph with the address of
// a registration row it fills after capture (custom_all_reduce_v2.py:447-451,
// 512-543): the replayed kernel reads every peer's captured input in place.
TEST(CustomKernelEdgeTest, GraphCaptureAndReplayReduceTheRegisteredInputs) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const int world = 4;
  const int inputs_per_rank = 3;
  CustomGroup g(world, int64_t{1} << 20, Elem::kBf16, inputs_per_rank, /*graph_rows=*/16);
  ASSERT_TRUE(g.ok());
  const int64_t sizes[inputs_per_rank] = {8, 4096 + 8, (int64_t{1} << 20) / 2};
  cudaStream_t stream;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  absl::Status captured = absl::OkStatus();
  std::vector<LamportLaunch> launches;
  for (int i = 0; i < inputs_per_rank && captured.ok(); ++i) {
    CustomGroup::Call call;
    call.elems = sizes[i];
    call.input = i;
    call.graph_row = g.region(0).graph_registered() + i;
    absl::StatusOr<LamportLaunch> l = g.MakeLaunch(call);
    captured = l.status();
    if (l.ok()) {
      launches.push_back(*l);
      captured = LaunchLamport(*l, stream);
    }
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  ASSERT_TRUE(captured.ok()) << captured;
  ASSERT_CUDA(ended);
  // Registration after capture, as SGLang does: row i of rank m points at
  // every rank's i-th captured input.
  std::vector<LamportWorkspace*> members;
  std::vector<std::vector<const void*>> recorded(world);
  for (int r = 0; r < world; ++r) {
    members.push_back(&g.region(r));
    for (int i = 0; i < inputs_per_rank; ++i)
      recorded[static_cast<size_t>(r)].push_back(g.input(r, i));
  }
  ASSERT_TRUE(LamportWorkspace::RegisterGraphInputsLocal(members, recorded).ok());
  EXPECT_EQ(g.region(2).graph_registered(), inputs_per_rank);
  cudaGraphExec_t exec;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 4; ++replay) {
    std::vector<std::vector<std::vector<uint32_t>>> inputs;
    for (int i = 0; i < inputs_per_rank; ++i) {
      inputs.push_back(FillInputs(g, world, sizes[i], Elem::kBf16,
                                  static_cast<uint32_t>(1000 + 10 * replay + i), i));
    }
    ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    const absl::Status s = CheckLamportStatus(launches.front(), stream);
    ASSERT_TRUE(s.ok()) << s;
    for (int i = 0; i < inputs_per_rank; ++i) {
      ExpectBitExact(g, world, inputs[static_cast<size_t>(i)], sizes[i], Elem::kBf16, false, i,
                     absl::StrFormat("replay %d, captured call %d", replay, i));
    }
  }
  // An eager call between replays stages as before.
  const auto eager = FillInputs(g, world, 4096, Elem::kBf16, 77);
  CustomGroup::Call call;
  call.elems = 4096;
  ASSERT_TRUE(g.Run(call).ok());
  ExpectBitExact(g, world, eager, 4096, Elem::kBf16, false, 0, "eager after replays");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(CustomKernelEdgeTest, DifferentCapturedCountsAreRefusedBeforeAnyRowIsWritten) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const int world = 4;
  CustomGroup g(world, 4096, Elem::kBf16, 3, /*graph_rows=*/8);
  ASSERT_TRUE(g.ok());
  std::vector<LamportWorkspace*> members;
  std::vector<std::vector<const void*>> recorded(world);
  for (int r = 0; r < world; ++r) {
    members.push_back(&g.region(r));
    // Rank 2 recorded one input fewer (ROCm/aiter #2638: an allocator cache
    // hit skipped the record).
    for (int i = 0; i < (r == 2 ? 2 : 3); ++i) {
      recorded[static_cast<size_t>(r)].push_back(g.input(r, i));
    }
  }
  const absl::Status s = LamportWorkspace::RegisterGraphInputsLocal(members, recorded);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("rank 1: 3, rank 2: 2, rank 3: 3"));
  for (int r = 0; r < world; ++r) EXPECT_EQ(g.region(r).graph_registered(), 0) << r;
  // A table too small is refused too.
  std::vector<std::vector<const void*>> many(world, std::vector<const void*>(9, g.input(0)));
  EXPECT_EQ(LamportWorkspace::RegisterGraphInputsLocal(members, many).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(CustomKernelEdgeTest, ARankThatNeverLaunchesIsNamedWhenTheBarrierWaitExpires) {
  LOCKSTEP_REQUIRE_GPUS(1);
  CustomGroup g(4, 4096, Elem::kBf16);
  ASSERT_TRUE(g.ok());
  FillInputs(g, 4, 2048, Elem::kBf16, 5);
  CustomGroup::Call call;
  call.elems = 2048;
  call.launched_ranks = 3;  // rank 3 never launches
  call.budget_ns = 20'000'000;
  const absl::Status s = g.Run(call);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("at the start barrier of call 1 for rank 3's flag"));
  EXPECT_THAT(s.message(), HasSubstr("rank 3 never arrived"));
}

TEST(CustomKernelEdgeTest, TheHostAbortWordStopsASpinningBarrier) {
  LOCKSTEP_REQUIRE_GPUS(1);
  CustomGroup g(2, 4096, Elem::kBf16);
  ASSERT_TRUE(g.ok());
  CustomGroup::Call call;
  call.elems = 2048;
  call.launched_ranks = 1;
  call.budget_ns = 60'000'000'000ull;  // only the abort word can end it
  std::thread raise([&g] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    *g.region(0).abort_word() = 1;
  });
  const absl::Status s = g.Run(call);
  raise.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("while waiting for rank 1's flag"));
}

TEST(CustomKernelEdgeTest, ARegionRefusesWhatItCannotHold) {
  LOCKSTEP_REQUIRE_GPUS(1);
  CustomGroup g(2, 4096, Elem::kBf16);
  ASSERT_TRUE(g.ok());
  CustomGroup::Call call;
  call.elems = 4096;  // 8 KiB of bf16 in a 4 KiB region
  const absl::Status s = g.Run(call);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("do not fit the custom all-reduce region"));
  WorkspaceSpec bad;
  bad.world = 17;
  bad.custom_bytes = 4096;
  std::vector<int> devices(17, 0);
  EXPECT_EQ(LamportWorkspace::CreateLocal(bad, devices).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// ---- SGLang 0.5.23's v2 algorithms (kernels/protocol/custom_v2.h) ----

struct V2Case {
  int world;
  Elem elem;
  Algorithm algorithm;
};

void PrintTo(const V2Case& c, std::ostream* os) {
  *os << "world " << c.world << ", elem " << static_cast<int>(c.elem) << ", "
      << AlgorithmName(c.algorithm);
}

class CustomV2KernelTest : public ::testing::TestWithParam<V2Case> {};

// Sizes that split unevenly into 2shot_pull shards, a partial grid, the bound;
// 40 calls in a row alternate the push halves and advance the pull windows.
TEST_P(CustomV2KernelTest, ReducesBitExactlyCallAfterCall) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const V2Case c = GetParam();
  const int64_t max_bytes = int64_t{512} << 10;
  CustomGroup g(c.world, max_bytes, c.elem, 1, 0, /*push_bytes=*/max_bytes);
  ASSERT_TRUE(g.ok());
  const int64_t vec = 16 / protocol::ElemBytes(c.elem);
  const int64_t max_elems = max_bytes / protocol::ElemBytes(c.elem);
  std::mt19937 gen(static_cast<uint32_t>(c.world * 31 + static_cast<int>(c.algorithm)));
  for (int call_index = 0; call_index < 40; ++call_index) {
    int64_t elems =
        vec * (1 + static_cast<int64_t>(gen() % static_cast<uint32_t>(max_elems / vec)));
    if (call_index == 0) elems = vec;
    if (call_index == 1) elems = vec * (c.world + 1);  // shards of 2 and 1 vectors
    if (call_index == 2) elems = max_elems;
    const bool in_place = call_index % 3 == 1;
    const auto inputs =
        FillInputs(g, c.world, elems, c.elem, 300u + static_cast<uint32_t>(call_index));
    CustomGroup::Call call;
    call.elems = elems;
    call.in_place = in_place;
    call.algorithm = c.algorithm;
    call.blocks = IsCustomPush(c.algorithm) ? 132 : 64;  // H200's grids (custom_launch.cc)
    const absl::Status s = g.Run(call);
    ASSERT_TRUE(s.ok()) << "call " << call_index << ": " << s;
    ExpectBitExact(
        g, c.world, inputs, elems, c.elem, in_place, 0,
        absl::StrFormat("call %d: %d elements%s", call_index, elems, in_place ? " in place" : ""),
        c.algorithm == Algorithm::kTwoShotPush);
  }
}

INSTANTIATE_TEST_SUITE_P(VirtualRanks, CustomV2KernelTest,
                         ::testing::Values(V2Case{2, Elem::kBf16, Algorithm::kOneShotPush},
                                           V2Case{4, Elem::kFp16, Algorithm::kOneShotPush},
                                           V2Case{8, Elem::kBf16, Algorithm::kOneShotPush},
                                           V2Case{4, Elem::kFp32, Algorithm::kOneShotPush},
                                           V2Case{4, Elem::kBf16, Algorithm::kTwoShotPush},
                                           V2Case{8, Elem::kBf16, Algorithm::kTwoShotPush},
                                           V2Case{3, Elem::kFp16, Algorithm::kTwoShotPush},
                                           V2Case{2, Elem::kBf16, Algorithm::kOneShotPull},
                                           V2Case{8, Elem::kBf16, Algorithm::kOneShotPull},
                                           V2Case{3, Elem::kBf16, Algorithm::kTwoShotPull},
                                           V2Case{4, Elem::kFp32, Algorithm::kTwoShotPull},
                                           V2Case{8, Elem::kBf16, Algorithm::kTwoShotPull},
                                           V2Case{8, Elem::kFp16, Algorithm::kTwoShotPull}));

// Zeros are data, not the push plane's +0 marker: the writer turns them to
// -0 (numerically the same), so a reader never waits on them.
TEST(CustomV2KernelEdgeTest, ZeroInputsArePushedAsNegativeZeroAndSumToZero) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const int world = 4;
  CustomGroup g(world, 4096, Elem::kBf16, 1, 0, 4096);
  ASSERT_TRUE(g.ok());
  const int64_t elems = 2048;
  std::vector<std::vector<uint32_t>> inputs;
  for (int r = 0; r < world; ++r) {
    inputs.push_back(std::vector<uint32_t>(static_cast<size_t>(elems), 0u));
    if (r == 1) inputs.back()[7] = 0x3f80;  // 1.0 in one element of one rank
    g.Upload(g.input(r), inputs.back());
  }
  CustomGroup::Call call;
  call.elems = elems;
  call.algorithm = Algorithm::kOneShotPush;
  call.blocks = 132;
  call.budget_ns = 200'000'000;
  const absl::Status s = g.Run(call);
  ASSERT_TRUE(s.ok()) << s;
  const std::vector<uint32_t> got = g.Download(g.output(2), elems);
  EXPECT_EQ(got[7], 0x3f80u);
  // Every other element sums zeros and -0s: +0 or -0, never a wait.
  for (int64_t i = 0; i < elems; ++i) {
    if (i != 7) {
      EXPECT_EQ(got[static_cast<size_t>(i)] & 0x7fffu, 0u) << i;
    }
  }
}

// A captured pull call reads (1shot) or reduces in place into (2shot) the
// inputs every peer registered after capture; push calls take no graph row.
TEST(CustomV2KernelEdgeTest, GraphCaptureAndReplayOfPullCallsOnRegisteredInputs) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const int world = 4;
  const int captured = 2;
  // Pairs 0 and 1 for the pull calls, pair 2 for the pushed one.
  CustomGroup g(world, int64_t{1} << 20, Elem::kBf16, captured + 1, /*graph_rows=*/8,
                int64_t{64} << 10);
  ASSERT_TRUE(g.ok());
  const int64_t sizes[captured] = {(int64_t{1} << 20) / 2, 4096 + 8};
  const Algorithm algorithms[captured] = {Algorithm::kTwoShotPull, Algorithm::kOneShotPull};
  cudaStream_t stream;
  ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  ASSERT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  absl::Status status = absl::OkStatus();
  std::vector<LamportLaunch> launches;
  for (int i = 0; i < captured && status.ok(); ++i) {
    CustomGroup::Call call;
    call.elems = sizes[i];
    call.input = i;
    call.algorithm = algorithms[i];
    call.blocks = 64;
    call.graph_row = g.region(0).graph_registered() + i;
    absl::StatusOr<LamportLaunch> l = g.MakeLaunch(call);
    status = l.status();
    if (l.ok()) {
      launches.push_back(*l);
      status = LaunchLamport(*l, stream);
    }
  }
  // A pushed call captured between them: no row.
  if (status.ok()) {
    CustomGroup::Call push;
    push.elems = 1024;
    push.input = 2;
    push.algorithm = Algorithm::kOneShotPush;
    push.blocks = 132;
    absl::StatusOr<LamportLaunch> l = g.MakeLaunch(push);
    status = l.ok() ? LaunchLamport(*l, stream) : l.status();
  }
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_CUDA(ended);
  std::vector<LamportWorkspace*> members;
  std::vector<std::vector<const void*>> recorded(world);
  for (int r = 0; r < world; ++r) {
    members.push_back(&g.region(r));
    for (int i = 0; i < captured; ++i) recorded[static_cast<size_t>(r)].push_back(g.input(r, i));
  }
  ASSERT_TRUE(LamportWorkspace::RegisterGraphInputsLocal(members, recorded).ok());
  cudaGraphExec_t exec;
  ASSERT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    std::vector<std::vector<std::vector<uint32_t>>> inputs;
    for (int i = 0; i < captured; ++i) {
      inputs.push_back(FillInputs(g, world, sizes[i], Elem::kBf16,
                                  static_cast<uint32_t>(2000 + 10 * replay + i), i));
    }
    ASSERT_CUDA(cudaGraphLaunch(exec, stream));
    ASSERT_CUDA(cudaStreamSynchronize(stream));
    const absl::Status s = CheckLamportStatus(launches.front(), stream);
    ASSERT_TRUE(s.ok()) << s;
    ExpectBitExact(g, world, inputs[0], sizes[0], Elem::kBf16, false, 0,
                   absl::StrFormat("replay %d, 2shot_pull output", replay));
    ExpectBitExact(g, world, inputs[0], sizes[0], Elem::kBf16, true, 0,
                   absl::StrFormat("replay %d, 2shot_pull input reduced in place", replay));
    ExpectBitExact(g, world, inputs[1], sizes[1], Elem::kBf16, false, 1,
                   absl::StrFormat("replay %d, 1shot_pull output", replay));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST(CustomV2KernelEdgeTest, AMissingWriterIsNamedByThePushPollAndCountedByThePullBarrier) {
  LOCKSTEP_REQUIRE_GPUS(1);
  {
    CustomGroup g(4, 4096, Elem::kBf16, 1, 0, 4096);
    ASSERT_TRUE(g.ok());
    FillInputs(g, 4, 2048, Elem::kBf16, 5);
    CustomGroup::Call call;
    call.elems = 2048;
    call.algorithm = Algorithm::kOneShotPush;
    call.blocks = 8;
    call.launched_ranks = 3;  // rank 3 never launches
    call.budget_ns = 20'000'000;
    const absl::Status s = g.Run(call);
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_THAT(s.message(), HasSubstr("custom all-reduce (1shot_push)"));
    EXPECT_THAT(s.message(), HasSubstr("rank 3's data never landed"));
  }
  {
    CustomGroup g(4, 4096, Elem::kBf16);
    ASSERT_TRUE(g.ok());
    FillInputs(g, 4, 2048, Elem::kBf16, 6);
    CustomGroup::Call call;
    call.elems = 2048;
    call.algorithm = Algorithm::kTwoShotPull;
    call.blocks = 8;
    call.launched_ranks = 3;
    call.budget_ns = 20'000'000;
    const absl::Status s = g.Run(call);
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_THAT(s.message(), HasSubstr("custom all-reduce (2shot_pull)"));
    EXPECT_THAT(s.message(), HasSubstr("at phase 0 of the counting barrier, which had 3 of 4"));
  }
}

}  // namespace
}  // namespace lockstep::cuda
