// One rank of a GPU all-reduce group driven by the real dispatch core: a
// GroupCoordinator under the reference policy whose fused backend runs
// lockstep's Lamport kernels and whose NCCL backend calls NCCL. Shared by the
// one-process-two-GPU test (ranks are threads) and the MPI test (ranks are
// processes); `RunDispatchChecks` is the body both run on every rank.

#ifndef LOCKSTEP_TESTS_GPU_DISPATCH_RIG_H_
#define LOCKSTEP_TESTS_GPU_DISPATCH_RIG_H_

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "dispatch/group_coordinator.h"
#include "dispatch/policy.h"
#include "gtest/gtest.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/cuda/gpu_backends.h"
#include "kernels/cuda/workspace.h"
#include "kernels/protocol/element.h"

namespace lockstep::testing {

inline constexpr int64_t kRigHidden = 7168;
inline constexpr int64_t kRigMaxTokens = 256;

class DispatchRig {
 public:
  // `workspace` is this rank's; `comm` its NCCL communicator over the same
  // ranks; all on `device`.
  DispatchRig(int device, cuda::LamportWorkspace* workspace, ncclComm_t comm)
      : device_(device), workspace_(workspace) {
    cudaSetDevice(device);
    cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    fused_ = std::make_unique<cuda::GpuFusedBackend>(workspace, stream_);
    fused_->set_wait_budget_ns(5ull * 1000 * 1000 * 1000);
    nccl_ = std::make_unique<cuda::GpuNcclBackend>(comm, stream_);
    agreed_ws_.kind = WorkspaceKind::kAttnTp;
    agreed_ws_.group = GroupId{0};
    agreed_ws_.world_size = workspace->world();
    agreed_ws_.capacity = {workspace->spec().max_tokens, workspace->spec().hidden, DType::kBf16};
    agreed_ws_.initialized = true;
    FusedAgreedState agreed;
    agreed.library_available = true;
    agreed.workspace = &agreed_ws_;
    agreed.group = GroupId{0};
    agreed.group_world_size = workspace->world();
    fused_->set_agreed(agreed);
    GroupBackends b;
    b.fused = fused_.get();
    b.nccl = nccl_.get();
    coordinator_ =
        std::make_unique<GroupCoordinator>("attn_tp", GroupId{0}, workspace->world(),
                                           workspace->rank(), WorkspaceKind::kAttnTp, b, &policy_);
    const size_t bytes = static_cast<size_t>(2 * kRigMaxTokens * 2 * kRigHidden);
    cudaMalloc(&data_, bytes);
    cudaMalloc(&reference_, bytes);
    cudaMalloc(&residual_, bytes);
    cudaMalloc(&residual_out_, bytes);
    cudaMalloc(&ref_residual_out_, bytes);
    cudaMalloc(&ref_normed_, bytes);
    cudaMalloc(&gamma_, static_cast<size_t>(2 * kRigHidden));
  }
  ~DispatchRig() {
    cudaSetDevice(device_);
    for (void* p :
         {data_, reference_, residual_, residual_out_, ref_residual_out_, ref_normed_, gamma_}) {
      cudaFree(p);
    }
    cudaStreamDestroy(stream_);
  }

  int rank() const { return workspace_->rank(); }
  int world() const { return workspace_->world(); }
  GroupCoordinator& coordinator() { return *coordinator_; }
  cuda::GpuFusedBackend& fused() { return *fused_; }
  cuda::GpuNcclBackend& nccl() { return *nccl_; }
  cudaStream_t stream() const { return stream_; }
  void* data() const { return data_; }
  void* reference() const { return reference_; }

  // Fills data and reference with the same random bf16 values (rank-specific).
  void FillInputs(int64_t elems, uint32_t seed) {
    std::vector<uint16_t> host(static_cast<size_t>(elems));
    std::mt19937 gen(seed * 131u + static_cast<uint32_t>(rank()));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& h : host) {
      h = static_cast<uint16_t>(protocol::FromFloat(dist(gen), protocol::Elem::kBf16));
    }
    cudaSetDevice(device_);
    cudaMemcpy(data_, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(reference_, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
  }
  void FillNormOperands(uint32_t seed) {
    const int64_t elems = kRigMaxTokens * kRigHidden;
    std::vector<uint16_t> host(static_cast<size_t>(elems));
    std::mt19937 gen(seed);  // the same on every rank: the residual is replicated
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (auto& h : host) {
      h = static_cast<uint16_t>(protocol::FromFloat(dist(gen), protocol::Elem::kBf16));
    }
    cudaSetDevice(device_);
    cudaMemcpy(residual_, host.data(), host.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(gamma_, host.data(), static_cast<size_t>(kRigHidden) * 2, cudaMemcpyHostToDevice);
    fused_->set_norm_operands({residual_, residual_out_, gamma_, 1e-6f});
  }
  std::vector<uint16_t> Download(const void* p, int64_t elems) const {
    std::vector<uint16_t> host(static_cast<size_t>(elems));
    cudaSetDevice(device_);
    cudaMemcpy(host.data(), p, host.size() * 2, cudaMemcpyDeviceToHost);
    return host;
  }
  // The unfused baseline of the norm pattern on the reference (NCCL) sum.
  absl::Status ReferenceNorm(int64_t tokens) {
    cudaSetDevice(device_);
    absl::Status s =
        cuda::LaunchResidualRmsNorm(reference_, residual_, gamma_, ref_normed_, ref_residual_out_,
                                    tokens, kRigHidden, protocol::Elem::kBf16, 1e-6f, stream_);
    cudaStreamSynchronize(stream_);
    return s;
  }
  void* residual_out() const { return residual_out_; }
  void* ref_residual_out() const { return ref_residual_out_; }
  void* ref_normed() const { return ref_normed_; }

 private:
  int device_;
  cuda::LamportWorkspace* workspace_;
  cudaStream_t stream_ = nullptr;
  Workspace agreed_ws_;
  DispatchPolicy policy_;
  std::unique_ptr<cuda::GpuFusedBackend> fused_;
  std::unique_ptr<cuda::GpuNcclBackend> nccl_;
  std::unique_ptr<GroupCoordinator> coordinator_;
  void *data_ = nullptr, *reference_ = nullptr, *residual_ = nullptr, *residual_out_ = nullptr,
       *ref_residual_out_ = nullptr, *ref_normed_ = nullptr, *gamma_ = nullptr;
};

inline uint64_t Fnv1a(const std::vector<uint16_t>& v) {
  uint64_t h = 1469598103934665603ull;
  for (uint16_t x : v) {
    h = (h ^ (x & 0xffu)) * 1099511628211ull;
    h = (h ^ (x >> 8)) * 1099511628211ull;
  }
  return h;
}

// Whether every rank holds the same value (through the group's exchange).
inline bool SameOnEveryRank(cuda::PeerExchange& exchange, uint64_t mine) {
  const absl::StatusOr<std::vector<uint64_t>> all = cuda::AllGatherValue(exchange, mine);
  if (!all.ok()) {
    ADD_FAILURE() << all.status();
    return false;
  }
  return std::all_of(all->begin(), all->end(), [&](uint64_t theirs) { return theirs == mine; });
}

// The checks every rank runs, in lockstep with its peers. For each token
// count: the coordinator's decision (fused one-shot, fused two-shot, or
// NCCL past the workspace's capacity), then the result against NCCL's on a
// copy of the same input, and bitwise agreement across ranks. With two
// ranks the fused sum is one rounding of a + b, exactly what NCCL computes,
// so the comparison is bitwise; with more ranks the order of additions
// differs from NCCL's ring and the check is a tolerance.
inline void RunDispatchChecks(DispatchRig& rig, cuda::PeerExchange& exchange) {
  struct Step {
    int64_t tokens;
    BackendKind backend;
    Algorithm algorithm;
  };
  // bf16 x 7168 (14 KiB a token): one-shot up to 2 MiB (146 tokens) for two
  // ranks, two-shot beyond, NCCL past the workspace's 256 tokens.
  const Step steps[] = {{1, BackendKind::kFused, Algorithm::kOneShot},
                        {7, BackendKind::kFused, Algorithm::kOneShot},
                        {64, BackendKind::kFused, Algorithm::kOneShot},
                        {146, BackendKind::kFused, Algorithm::kOneShot},
                        {147, BackendKind::kFused, Algorithm::kTwoShot},
                        {kRigMaxTokens, BackendKind::kFused, Algorithm::kTwoShot},
                        {kRigMaxTokens + 1, BackendKind::kNccl, Algorithm::kNone},
                        {3, BackendKind::kFused, Algorithm::kOneShot}};
  uint32_t seed = 1;
  for (const Step& step : steps) {
    const int64_t elems = step.tokens * kRigHidden;
    if (step.tokens > kRigMaxTokens) {
      // Past capacity: the rig's buffers hold 2 x max tokens.
      ASSERT_LE(step.tokens, 2 * kRigMaxTokens);
    }
    rig.FillInputs(elems, seed++);
    Tensor t{TensorDesc::Matrix(step.tokens, kRigHidden, DType::kBf16), rig.data()};
    DecisionRecord record;
    const absl::Status s = rig.coordinator().AllReduce(t, &record);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(record.backend, step.backend) << step.tokens << " tokens";
    if (step.backend == BackendKind::kFused) {
      EXPECT_EQ(record.algorithm, step.algorithm) << step.tokens << " tokens";
    }
    Tensor ref{t.desc, rig.reference()};
    DecisionRecord nccl_record;
    ASSERT_TRUE(rig.nccl().AllReduce(ref, nccl_record).ok());
    const std::vector<uint16_t> got = rig.Download(rig.data(), elems);
    const std::vector<uint16_t> want = rig.Download(rig.reference(), elems);
    EXPECT_TRUE(SameOnEveryRank(exchange, Fnv1a(got)))
        << step.tokens << " tokens: ranks disagree bitwise";
    if (rig.world() == 2) {
      int64_t differing = 0;
      for (size_t i = 0; i < got.size(); ++i) differing += got[i] != want[i];
      EXPECT_EQ(differing, 0) << step.tokens << " tokens: elements differing from NCCL";
    } else {
      for (size_t i = 0; i < got.size(); ++i) {
        const float g = protocol::ToFloat(got[i], protocol::Elem::kBf16);
        const float w = protocol::ToFloat(want[i], protocol::Elem::kBf16);
        ASSERT_NEAR(g, w, 0.02f * static_cast<float>(rig.world()) * (1.0f + std::fabs(w)))
            << step.tokens << " tokens, element " << i;
      }
    }
  }

  // The fused residual add + RMSNorm against NCCL + the separate norm kernel.
  rig.FillNormOperands(77);
  for (int64_t tokens : {int64_t{1}, int64_t{5}, int64_t{32}}) {
    const int64_t elems = tokens * kRigHidden;
    rig.FillInputs(elems, seed++);
    Tensor t{TensorDesc::Matrix(tokens, kRigHidden, DType::kBf16), rig.data()};
    DecisionRecord record;
    CallContext ctx;
    ctx.pattern = FusionPattern::kAllReduceResidualRmsNorm;
    const absl::Status s = rig.coordinator().AllReduce(t, &record, ctx);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(record.backend, BackendKind::kFused);
    Tensor ref{t.desc, rig.reference()};
    DecisionRecord nccl_record;
    ASSERT_TRUE(rig.nccl().AllReduce(ref, nccl_record).ok());
    ASSERT_TRUE(rig.ReferenceNorm(tokens).ok());
    const std::vector<uint16_t> normed = rig.Download(rig.data(), elems);
    EXPECT_TRUE(SameOnEveryRank(exchange, Fnv1a(normed))) << tokens << " tokens (norm)";
    if (rig.world() == 2) {
      EXPECT_EQ(rig.Download(rig.residual_out(), elems),
                rig.Download(rig.ref_residual_out(), elems))
          << tokens << " tokens: residual_out differs from NCCL + residual";
      EXPECT_EQ(normed, rig.Download(rig.ref_normed(), elems))
          << tokens << " tokens: fused norm differs from NCCL + RMSNorm kernel";
    }
  }
}

}  // namespace lockstep::testing

#endif  // LOCKSTEP_TESTS_GPU_DISPATCH_RIG_H_
