// The Lamport all-reduce kernels with 2 to 32 virtual ranks on one GPU
// (one cooperative launch: every rank's blocks resident together): bitwise
// agreement across ranks, an fp64 reference, −0 and negative-subnormal inputs,
// buffer rotation over many calls of changing size, the fused RMSNorm, a
// rank that never launches, and the shape sweep: the kernels run exactly the
// calls the dispatch core's fused predicates admit.

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "absl/strings/str_format.h"
#include "dispatch/backend.h"
#include "dispatch/fused_launch.h"
#include "dispatch/kernel_shape.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/cuda/workspace.h"
#include "kernels/protocol/element.h"
#include "tests/gpu/element_bits.h"
#include "tests/gpu/gpu_test_environment.h"

namespace lockstep::cuda {
namespace {

using protocol::Elem;
using ::testing::HasSubstr;

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

// One group of virtual ranks on device 0, with inputs and outputs.
class VirtualGroup {
 public:
  VirtualGroup(int world, int64_t max_tokens, int64_t hidden, Elem elem)
      : world_(world), hidden_(hidden), elem_(elem), esize_(protocol::ElemBytes(elem)) {
    std::vector<int> devices(static_cast<size_t>(world), 0);
    auto group = LamportWorkspace::CreateLocal({world, max_tokens, hidden, elem}, devices);
    EXPECT_TRUE(group.ok()) << group.status();
    if (group.ok()) workspaces_ = std::move(*group);
    const size_t bytes = static_cast<size_t>(max_tokens * hidden * esize_);
    for (int r = 0; r < world; ++r) {
      void *in = nullptr, *out = nullptr, *res = nullptr, *res_out = nullptr;
      cudaMalloc(&in, bytes);
      cudaMalloc(&out, bytes);
      cudaMalloc(&res, bytes);
      cudaMalloc(&res_out, bytes);
      inputs_.push_back(in);
      outputs_.push_back(out);
      residuals_.push_back(res);
      residual_outs_.push_back(res_out);
    }
    cudaMalloc(&gamma_, static_cast<size_t>(hidden * esize_));
    cudaMalloc(&status_, sizeof(LamportStatus) * kMaxVirtualRanks);
    cudaMemset(status_, 0, sizeof(LamportStatus) * kMaxVirtualRanks);
  }
  ~VirtualGroup() {
    for (void* p : inputs_) cudaFree(p);
    for (void* p : outputs_) cudaFree(p);
    for (void* p : residuals_) cudaFree(p);
    for (void* p : residual_outs_) cudaFree(p);
    cudaFree(gamma_);
    cudaFree(status_);
  }

  void SetInput(int rank, const std::vector<uint32_t>& bits) {
    Upload(inputs_[static_cast<size_t>(rank)], bits);
  }
  void SetResidual(int rank, const std::vector<uint32_t>& bits) {
    Upload(residuals_[static_cast<size_t>(rank)], bits);
  }
  void SetGamma(const std::vector<uint32_t>& bits) { Upload(gamma_, bits); }
  std::vector<uint32_t> Output(int rank, int64_t elems) {
    return Download(outputs_[static_cast<size_t>(rank)], elems);
  }
  std::vector<uint32_t> ResidualOut(int rank, int64_t elems) {
    return Download(residual_outs_[static_cast<size_t>(rank)], elems);
  }

  struct Call {
    int64_t elems = 0;
    bool two_shot = false;
    bool rank_order_sum = true;
    bool fp32_acc = false;
    bool rms_norm = false;
    int launched_ranks = -1;  // -1: all
    uint64_t budget_ns = 2'000'000'000;
    int blocks_per_rank = 4;
  };
  absl::Status Run(const Call& c) {
    LamportLaunch l;
    l.world = world_;
    l.elems = c.elems;
    l.hidden = hidden_;
    l.buffer_elems = workspaces_.front()->buffer_elems();
    l.elem = elem_;
    l.two_shot = c.two_shot;
    l.options.rank_order_sum = c.rank_order_sum;
    l.fp32_acc = c.fp32_acc;
    l.rms_norm = c.rms_norm;
    l.wait_budget_ns = c.budget_ns;
    l.status = status_;
    l.abort = workspaces_.front()->abort_device();
    l.virtual_ranks = c.launched_ranks < 0 ? world_ : c.launched_ranks;
    l.blocks_per_rank = c.blocks_per_rank;
    for (int r = 0; r < l.virtual_ranks; ++r) {
      LamportRank p = workspaces_[static_cast<size_t>(r)]->RankParams();
      p.input = inputs_[static_cast<size_t>(r)];
      p.output = outputs_[static_cast<size_t>(r)];
      p.residual = residuals_[static_cast<size_t>(r)];
      p.residual_out = residual_outs_[static_cast<size_t>(r)];
      p.gamma = gamma_;
      l.ranks[r] = p;
    }
    if (absl::Status s = LaunchLamport(l, nullptr); !s.ok()) return s;
    absl::Status s = CheckLamportStatus(l, nullptr);
    cudaMemset(status_, 0, sizeof(LamportStatus) * kMaxVirtualRanks);
    return s;
  }
  LamportWorkspace& workspace(int r) { return *workspaces_[static_cast<size_t>(r)]; }

 private:
  void Upload(void* dst, const std::vector<uint32_t>& bits) { UploadBits(dst, bits, esize_); }

  std::vector<uint32_t> Download(void* src, int64_t elems) {
    return DownloadBits(src, elems, esize_);
  }

  int world_;
  int64_t hidden_;
  Elem elem_;
  int esize_;
  std::vector<std::unique_ptr<LamportWorkspace>> workspaces_;
  std::vector<void*> inputs_, outputs_, residuals_, residual_outs_;
  void* gamma_ = nullptr;
  LamportStatus* status_ = nullptr;
};

// Checks every rank's output: bitwise equal across ranks, and within
// world * eps * sum|x| of the fp64 sum.
void ExpectReduced(VirtualGroup& g, const std::vector<std::vector<uint32_t>>& inputs, int64_t elems,
                   Elem e, const std::string& what) {
  const double eps = e == Elem::kFp32 ? 1.2e-7 : e == Elem::kBf16 ? 7.9e-3 : 9.8e-4;
  const std::vector<uint32_t> first = g.Output(0, elems);
  for (size_t r = 1; r < inputs.size(); ++r) {
    ASSERT_EQ(g.Output(static_cast<int>(r), elems), first)
        << what << ": rank " << r << " differs bitwise from rank 0";
  }
  for (int64_t i = 0; i < elems; ++i) {
    double sum = 0, mag = 0;
    for (const auto& in : inputs) {
      const double x = static_cast<double>(protocol::ToFloat(in[static_cast<size_t>(i)], e));
      sum += x;
      mag += std::fabs(x);
    }
    const double got = static_cast<double>(protocol::ToFloat(first[static_cast<size_t>(i)], e));
    ASSERT_LE(std::fabs(got - sum), static_cast<double>(inputs.size()) * eps * mag + 1e-30)
        << what << ": element " << i << " got " << got << " want " << sum;
  }
}

struct Case {
  int world;
  Elem elem;
  int64_t hidden;
  bool two_shot;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << "world " << c.world << ", elem " << static_cast<int>(c.elem) << ", hidden " << c.hidden
      << (c.two_shot ? ", two-shot" : ", one-shot");
}

class LamportKernelTest : public ::testing::TestWithParam<Case> {};

TEST_P(LamportKernelTest, ReducesEveryTokenCountExactlyAndIdenticallyOnEveryRank) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const Case c = GetParam();
  const int64_t max_tokens = 64;
  VirtualGroup g(c.world, max_tokens, c.hidden, c.elem);
  uint32_t seed = 1;
  // Changing sizes exercise the clear of the previous call's footprint.
  for (int64_t tokens : {int64_t{1}, int64_t{3}, int64_t{16}, max_tokens, int64_t{2}, int64_t{1}}) {
    const int64_t elems = tokens * c.hidden;
    std::vector<std::vector<uint32_t>> inputs;
    for (int r = 0; r < c.world; ++r) {
      inputs.push_back(RandomBits(elems, c.elem, seed++));
      g.SetInput(r, inputs.back());
    }
    VirtualGroup::Call call;
    call.elems = elems;
    call.two_shot = c.two_shot;
    const absl::Status s = g.Run(call);
    ASSERT_TRUE(s.ok()) << s;
    ExpectReduced(g, inputs, elems, c.elem, absl::StrFormat("%d tokens", tokens));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LamportKernelTest,
    ::testing::Values(Case{2, Elem::kBf16, 7168, false}, Case{2, Elem::kBf16, 7168, true},
                      Case{4, Elem::kBf16, 2048, false}, Case{4, Elem::kFp16, 8192, true},
                      Case{8, Elem::kBf16, 7168, false}, Case{8, Elem::kBf16, 8192, true},
                      Case{8, Elem::kFp16, 2048, false}, Case{2, Elem::kFp32, 2048, false},
                      Case{4, Elem::kFp32, 7168, true}, Case{8, Elem::kFp32, 8192, false},
                      // Rows that are not a whole number of chunks: short chunks.
                      Case{2, Elem::kBf16, 2056, false}, Case{4, Elem::kBf16, 2056, true},
                      // The GB200 scenarios' group sizes (tp16, tp32).
                      Case{16, Elem::kBf16, 7168, false}, Case{16, Elem::kBf16, 7168, true},
                      Case{32, Elem::kBf16, 2048, false}, Case{32, Elem::kFp16, 4096, true}),
    [](const auto& param_info) {
      const Case& c = param_info.param;
      return absl::StrFormat("w%d_%s_h%d_%s", c.world,
                             c.elem == Elem::kBf16   ? "bf16"
                             : c.elem == Elem::kFp16 ? "fp16"
                                                     : "fp32",
                             c.hidden, c.two_shot ? "two_shot" : "one_shot");
    });

TEST(LamportKernelEdgeTest, NegativeZeroAndNegativeSubnormalInputsAreData) {
  LOCKSTEP_REQUIRE_GPUS(1);
  for (Elem e : {Elem::kBf16, Elem::kFp16, Elem::kFp32}) {
    VirtualGroup g(4, 8, 2048, e);
    const int64_t elems = 8 * 2048;
    std::vector<std::vector<uint32_t>> inputs;
    for (int r = 0; r < 4; ++r) {
      std::vector<uint32_t> bits = RandomBits(elems, e, 100 + static_cast<uint32_t>(r));
      for (int64_t i = r; i < elems; i += 7)
        bits[static_cast<size_t>(i)] = protocol::NegZeroBits(e);
      for (int64_t i = 3; i < elems; i += 11) {
        bits[static_cast<size_t>(i)] = protocol::SignBit(e) | 1u;  // negative subnormal
      }
      inputs.push_back(bits);
      g.SetInput(r, bits);
    }
    for (bool two_shot : {false, true}) {
      VirtualGroup::Call call;
      call.elems = elems;
      call.two_shot = two_shot;
      call.budget_ns = 500'000'000;
      const absl::Status s = g.Run(call);
      ASSERT_TRUE(s.ok()) << s;
      ExpectReduced(g, inputs, elems, e, "-0 and subnormal inputs");
    }
  }
}

TEST(LamportKernelEdgeTest, ManyCallsRotateTheThreeBuffersWithoutStaleData) {
  LOCKSTEP_REQUIRE_GPUS(1);
  VirtualGroup g(8, 32, 7168, Elem::kBf16);
  for (int call = 0; call < 24; ++call) {
    const int64_t elems = (1 + (call * 7) % 32) * 7168;
    std::vector<std::vector<uint32_t>> inputs;
    for (int r = 0; r < 8; ++r) {
      inputs.push_back(RandomBits(elems, Elem::kBf16, static_cast<uint32_t>(call * 8 + r)));
      g.SetInput(r, inputs.back());
    }
    VirtualGroup::Call c;
    c.elems = elems;
    c.two_shot = call % 3 == 2;
    ASSERT_TRUE(g.Run(c).ok()) << "call " << call;
    ExpectReduced(g, inputs, elems, Elem::kBf16, absl::StrFormat("call %d", call));
  }
}

// The kernel honours the summation-order flag (mutant sum-from-own-rank):
// summed from each rank's own slot on, bf16 sums round differently on
// different ranks, which the reference order never does.
TEST(LamportKernelEdgeTest, SummingFromTheOwnSlotBreaksBitwiseAgreement) {
  LOCKSTEP_REQUIRE_GPUS(1);
  VirtualGroup g(8, 4, 2048, Elem::kBf16);
  const int64_t elems = 4 * 2048;
  for (int r = 0; r < 8; ++r) {
    g.SetInput(r, RandomBits(elems, Elem::kBf16, 700 + static_cast<uint32_t>(r)));
  }
  VirtualGroup::Call c;
  c.elems = elems;
  ASSERT_TRUE(g.Run(c).ok());
  const std::vector<uint32_t> first = g.Output(0, elems);
  for (int r = 1; r < 8; ++r) ASSERT_EQ(g.Output(r, elems), first) << "reference, rank " << r;
  c.rank_order_sum = false;
  ASSERT_TRUE(g.Run(c).ok());
  const std::vector<uint32_t> mine = g.Output(0, elems);
  int differing = 0;
  for (int r = 1; r < 8; ++r) differing += g.Output(r, elems) != mine ? 1 : 0;
  EXPECT_GT(differing, 0) << "every rank summed from its own slot, yet all agree bitwise";
}

TEST(LamportKernelEdgeTest, Fp32AccumulationIsAtLeastAsAccurate) {
  LOCKSTEP_REQUIRE_GPUS(1);
  VirtualGroup g(8, 4, 2048, Elem::kBf16);
  const int64_t elems = 4 * 2048;
  std::vector<std::vector<uint32_t>> inputs;
  for (int r = 0; r < 8; ++r) {
    inputs.push_back(RandomBits(elems, Elem::kBf16, 900 + static_cast<uint32_t>(r)));
    g.SetInput(r, inputs.back());
  }
  VirtualGroup::Call c;
  c.elems = elems;
  c.fp32_acc = true;
  ASSERT_TRUE(g.Run(c).ok());
  ExpectReduced(g, inputs, elems, Elem::kBf16, "fp32 accumulation");
}

TEST(LamportKernelEdgeTest, FusedResidualRmsNormMatchesTheHostComputation) {
  LOCKSTEP_REQUIRE_GPUS(1);
  for (int64_t hidden : {int64_t{2048}, int64_t{7168}, int64_t{2056}}) {
    const int world = 4;
    const int64_t tokens = 5;
    const int64_t elems = tokens * hidden;
    VirtualGroup g(world, 16, hidden, Elem::kBf16);
    std::vector<std::vector<uint32_t>> inputs, residuals;
    for (int r = 0; r < world; ++r) {
      inputs.push_back(RandomBits(elems, Elem::kBf16, 40 + static_cast<uint32_t>(r)));
      residuals.push_back(RandomBits(elems, Elem::kBf16, 50));  // replicated residual
      g.SetInput(r, inputs.back());
      g.SetResidual(r, residuals.back());
    }
    const std::vector<uint32_t> gamma = RandomBits(hidden, Elem::kBf16, 60);
    g.SetGamma(gamma);
    VirtualGroup::Call c;
    c.elems = elems;
    c.rms_norm = true;
    ASSERT_TRUE(g.Run(c).ok());
    const std::vector<uint32_t> out0 = g.Output(0, elems);
    for (int r = 1; r < world; ++r) ASSERT_EQ(g.Output(r, elems), out0) << "rank " << r;
    const std::vector<uint32_t> res0 = g.ResidualOut(0, elems);
    for (int64_t t = 0; t < tokens; ++t) {
      double sumsq = 0;
      std::vector<double> x(static_cast<size_t>(hidden));
      for (int64_t h = 0; h < hidden; ++h) {
        const size_t i = static_cast<size_t>(t * hidden + h);
        double s = static_cast<double>(protocol::ToFloat(residuals[0][i], Elem::kBf16));
        for (int r = 0; r < world; ++r) {
          s += static_cast<double>(
              protocol::ToFloat(inputs[static_cast<size_t>(r)][i], Elem::kBf16));
        }
        x[static_cast<size_t>(h)] = s;
        sumsq += s * s;
        ASSERT_NEAR(static_cast<double>(protocol::ToFloat(res0[i], Elem::kBf16)), s,
                    0.05 + 0.02 * std::fabs(s));
      }
      const double scale = 1.0 / std::sqrt(sumsq / static_cast<double>(hidden) + 1e-6);
      for (int64_t h = 0; h < hidden; ++h) {
        const size_t i = static_cast<size_t>(t * hidden + h);
        const double want =
            x[static_cast<size_t>(h)] * scale *
            static_cast<double>(protocol::ToFloat(gamma[static_cast<size_t>(h)], Elem::kBf16));
        ASSERT_NEAR(static_cast<double>(protocol::ToFloat(out0[i], Elem::kBf16)), want,
                    0.05 + 0.03 * std::fabs(want))
            << "token " << t << " element " << h;
      }
    }
  }
}

TEST(LamportKernelEdgeTest, ARankThatNeverLaunchesIsNamedWhenTheBoundedWaitExpires) {
  LOCKSTEP_REQUIRE_GPUS(1);
  VirtualGroup g(4, 4, 2048, Elem::kBf16);
  for (int r = 0; r < 4; ++r) g.SetInput(r, RandomBits(2048, Elem::kBf16, 7));
  VirtualGroup::Call c;
  c.elems = 2048;
  c.launched_ranks = 3;  // rank 3 never launches
  c.budget_ns = 20'000'000;
  const absl::Status s = g.Run(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_THAT(s.message(), HasSubstr("rank 3 never arrived"));
}

TEST(LamportKernelEdgeTest, TheHostAbortWordStopsASpinningKernel) {
  LOCKSTEP_REQUIRE_GPUS(1);
  VirtualGroup g(2, 4, 2048, Elem::kBf16);
  *g.workspace(0).abort_word() = 1;
  VirtualGroup::Call c;
  c.elems = 2048;
  c.launched_ranks = 1;
  c.budget_ns = 60'000'000'000ull;  // only the abort word can end it
  const absl::Status s = g.Run(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_THAT(s.message(), HasSubstr("while waiting for rank 1"));
}

Elem ElemOf(DType d) {
  return d == DType::kBf16 ? Elem::kBf16 : d == DType::kFp16 ? Elem::kFp16 : Elem::kFp32;
}

// The GPU half of the shape sweep (the CPU half is KernelShapeTest in
// tests/dispatch/kernel_shape_test.cc): for every call, ask the fused
// backend's predicates, build the launch the GPU backend would (norm
// one-shot, the algorithm from SelectFusedAlgorithm) and run it on virtual
// ranks. Every admitted call runs and reduces bit-identically on every rank;
// every call the kernels refuse was refused by the predicates, and for its
// shape, so no shape is `clean` in the simulator and a launch failure here.
TEST(KernelShapeSweepOnGpuTest, TheKernelsRunExactlyTheCallsThePredicatesAdmit) {
  LOCKSTEP_REQUIRE_GPUS(1);
  const int64_t max_tokens = 64;
  int ran = 0, refused_alike = 0;
  for (int world : {2, 4, 8, 16}) {
    for (DType dtype : {DType::kBf16, DType::kFp16, DType::kFp32}) {
      for (int64_t hidden : {int64_t{1000}, int64_t{1001}, int64_t{2048}, int64_t{4100},
                             int64_t{4104}, int64_t{7168}}) {
        const Elem elem = ElemOf(dtype);
        VirtualGroup g(world, max_tokens, hidden, elem);
        Workspace ws;
        ws.kind = WorkspaceKind::kAttnTp;
        ws.group = GroupId{0};
        ws.world_size = world;
        ws.capacity = WorkspaceCapacity{max_tokens, hidden, dtype};
        ws.initialized = true;
        FusedAgreedState state;
        state.library_available = true;
        state.workspace = &ws;
        state.group = GroupId{0};
        state.group_world_size = world;
        state.capacity_rule = FusedCapacityRule::kPerDimension;
        state.norm_path = true;
        state.norm_max_tokens = max_tokens;
        uint32_t seed = 1;
        for (int64_t tokens : {int64_t{1}, int64_t{3}, int64_t{16}, max_tokens}) {
          const int64_t elems = tokens * hidden;
          std::vector<std::vector<uint32_t>> inputs;
          for (int r = 0; r < world; ++r) {
            inputs.push_back(RandomBits(elems, elem, seed++));
            g.SetInput(r, inputs.back());
            g.SetResidual(r, RandomBits(elems, elem, 7));
          }
          g.SetGamma(RandomBits(hidden, elem, 8));
          for (bool norm : {false, true}) {
            SCOPED_TRACE(absl::StrFormat("world %d, %d-byte elements, hidden %d, %d tokens%s",
                                         world, DTypeSize(dtype), hidden, tokens,
                                         norm ? ", fused norm" : ""));
            CallDesc call;
            call.tensor = TensorDesc::Matrix(tokens, hidden, dtype);
            if (norm) {
              call.context.pattern = FusionPattern::kAllReduceResidualRmsNorm;
              call.context.norm_workspace = WorkspaceKind::kAttnTp;
            }
            DecisionRecord record;
            const bool admitted = norm ? FusedNormPredicatesHold(state, call, record)
                                       : FusedPredicatesHold(state, call, record);
            VirtualGroup::Call c;
            c.elems = elems;
            c.rms_norm = norm;
            c.two_shot =
                !norm && SelectFusedAlgorithm(call.tensor.bytes(), world) == Algorithm::kTwoShot;
            LamportShape shape;
            shape.world = world;
            shape.elems = elems;
            shape.hidden = hidden;
            shape.elem_bytes = DTypeSize(dtype);
            shape.rms_norm = norm;
            shape.two_shot = c.two_shot;
            const std::string why = LamportShapeRefusal(shape);
            if (admitted) {
              const absl::Status s = g.Run(c);
              ASSERT_TRUE(s.ok()) << "the predicates admit a call the kernels fail: " << s;
              if (norm) {
                const std::vector<uint32_t> out0 = g.Output(0, elems);
                for (int r = 1; r < world; ++r) ASSERT_EQ(g.Output(r, elems), out0) << r;
              } else {
                ExpectReduced(g, inputs, elems, elem, "admitted call");
              }
              ++ran;
            } else if (!why.empty()) {
              // The launcher refuses it too, with the same reason, before
              // any kernel runs; the predicates refused it for its shape.
              const absl::Status s = g.Run(c);
              EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
              EXPECT_EQ(s.message(), why);
              EXPECT_FALSE(record.Held(Predicate::kHiddenAligned));
              ++refused_alike;
            }
          }
        }
      }
    }
  }
  // The sweep exercised both sides.
  EXPECT_GT(ran, 100);
  EXPECT_GT(refused_alike, 10);
}

}  // namespace
}  // namespace lockstep::cuda
