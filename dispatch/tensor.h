// What the dispatch core knows about a tensor it all-reduces.

#ifndef LOCKSTEP_DISPATCH_TENSOR_H_
#define LOCKSTEP_DISPATCH_TENSOR_H_

#include <array>
#include <cstdint>

#include "dispatch/dtype.h"
#include "dispatch/workspace.h"

namespace lockstep {

// Shape, layout and element type: the per-call metadata every predicate reads.
// A model that runs correctly passes the same TensorDesc on every rank of a
// group (a caller passing different shapes is outside the dispatch contract).
struct TensorDesc {
  static constexpr int kMaxDims = 4;

  int ndim = 2;
  std::array<int64_t, kMaxDims> dims{};
  bool contiguous = true;
  DType dtype = DType::kBf16;

  // A contiguous [tokens, hidden] activation, the shape of every all-reduce
  // site except the embedding output.
  static constexpr TensorDesc Matrix(int64_t tokens, int64_t hidden, DType dtype) {
    TensorDesc d;
    d.ndim = 2;
    d.dims = {tokens, hidden, 0, 0};
    d.dtype = dtype;
    return d;
  }

  // Leading dimension (the token count of a 2-D activation).
  constexpr int64_t tokens() const { return dims[0]; }
  // Trailing dimension (the hidden size).
  constexpr int64_t hidden() const { return ndim > 0 ? dims[static_cast<size_t>(ndim - 1)] : 0; }
  constexpr int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < ndim; ++i) n *= dims[static_cast<size_t>(i)];
    return n;
  }
  constexpr int64_t bytes() const { return numel() * DTypeSize(dtype); }

  friend bool operator==(const TensorDesc&, const TensorDesc&) = default;
};

// A tensor handed to an all-reduce. `data` is owned by the backend runtime
// (a device pointer on GPUs, simulated rank memory in the simulator); the
// dispatch core never dereferences it.
struct Tensor {
  TensorDesc desc;
  void* data = nullptr;
};

// What the all-reduce is fused with (FlashInfer's AllReduceFusionPattern).
enum class FusionPattern : uint8_t {
  kAllReduce = 0,                 // plain all-reduce (kAllReduce)
  kAllReduceResidualRmsNorm = 1,  // all-reduce + residual add + RMSNorm (kARResidualRMSNorm)
};

// How the caller is running when it all-reduces.
struct CallContext {
  FusionPattern pattern = FusionPattern::kAllReduce;
  // With kAllReduceResidualRmsNorm: the workspace the fused kernel runs on,
  // named by the call site as SGLang 0.5.23's fused consumers name it (the
  // attention workspace for the attention output, the MoE workspace for a
  // deferred FFN sum), whatever the group's tag. kNone: the group's tag
  // decides, as PR #30700's dispatch did.
  WorkspaceKind norm_workspace = WorkspaceKind::kNone;
  // The model's norm after this all-reduce is a plain RMSNorm after a plain
  // residual add, which the fused kernel can absorb (not DeepSeek-V4's mHC).
  bool norm_fusable = true;
  // The call is being traced (torch.compile / Dynamo): the decision is taken
  // once, at trace time, and baked into the captured graph.
  bool tracing = false;
  // The call is being captured into a CUDA graph.
  bool graph_capture = false;

  friend bool operator==(const CallContext&, const CallContext&) = default;
};

// Everything one all-reduce call tells the dispatch core besides the data.
struct CallDesc {
  TensorDesc tensor;
  CallContext context;
};

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_TENSOR_H_
