// Fusion workspaces on GPUs: each rank's three Lamport receive buffers, its
// control block and status word, and the mapped addresses of every peer's
// buffers.
//
// Three ways to build a workspace group:
//  - virtual ranks on one GPU (tests on single-GPU hosts): plain device
//    allocations, all ranks' buffers in one address space;
//  - one process driving several GPUs: per-device allocations with peer access;
//  - one process per GPU: cuMem allocations exported as FABRIC handles where the
//    device supports them (GB200 MNNVL), POSIX file descriptors otherwise,
//    exchanged through the caller's bootstrap (MPI), imported and mapped.
// No NVLink multicast object is ever created.

#ifndef LOCKSTEP_KERNELS_CUDA_WORKSPACE_H_
#define LOCKSTEP_KERNELS_CUDA_WORKSPACE_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/lamport_launch.h"

namespace lockstep::cuda {

struct WorkspaceSpec {
  int world = 1;
  int64_t max_tokens = 0;
  int64_t hidden = 0;
  protocol::Elem elem = protocol::Elem::kBf16;
  // > 0: a custom all-reduce region instead of three Lamport buffers: a
  // staging buffer of this many bytes (the backend's size bound) and the
  // barrier flags, zeroed; max_tokens and hidden are then unused.
  int64_t custom_bytes = 0;
  // Custom all-reduce: bytes of one v2 push slot (its 1shot_push bound); 0
  // when no call of the region is pushed.
  int64_t custom_push_bytes = 0;
  // Custom all-reduce: rows of the CUDA-graph registration table (one per
  // captured input; SGLang's _MAX_GRAPH_INPUTS is 131072).
  int64_t graph_rows = 0;
};

// How the ranks of a multi-process workspace exchange bytes (an all-gather
// over the workspace's group; MPI in lockstep's tools).
class PeerExchange {
 public:
  virtual ~PeerExchange() = default;
  virtual int rank() const = 0;  // this process's index in the group
  virtual int world() const = 0;
  // `all` receives world() * mine.size() bytes, rank-major.
  virtual absl::Status AllGather(std::span<const uint8_t> mine, std::span<uint8_t> all) = 0;
};

// Every rank's copy of `mine` (a trivially copyable value), in rank order.
template <class T>
absl::StatusOr<std::vector<T>> AllGatherValue(PeerExchange& exchange, const T& mine) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<T> all(static_cast<size_t>(exchange.world()));
  absl::Status s = exchange.AllGather(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&mine), sizeof(T)),
      std::span<uint8_t>(reinterpret_cast<uint8_t*>(all.data()), sizeof(T) * all.size()));
  if (!s.ok()) return s;
  return all;
}

class LamportWorkspace {
 public:
  ~LamportWorkspace();
  LamportWorkspace(const LamportWorkspace&) = delete;
  LamportWorkspace& operator=(const LamportWorkspace&) = delete;

  // `ranks` workspaces of one group, all in this process: rank r on
  // devices[r] (all equal: virtual ranks on one GPU; distinct: peer access is
  // enabled between them).
  static absl::StatusOr<std::vector<std::unique_ptr<LamportWorkspace>>> CreateLocal(
      const WorkspaceSpec& spec, std::span<const int> devices);

  // This process's workspace of a group spread over processes, on `device`.
  static absl::StatusOr<std::unique_ptr<LamportWorkspace>> CreateShared(const WorkspaceSpec& spec,
                                                                        int device,
                                                                        PeerExchange& exchange);

  int rank() const { return rank_; }
  int world() const { return spec_.world; }
  int device() const { return device_; }
  const WorkspaceSpec& spec() const { return spec_; }
  int64_t buffer_elems() const { return buffer_elems_; }
  // How peers reach the buffers: "fabric", "device", or "posix_fd" followed
  // by why not FABRIC ("(the device reports no FABRIC handle support)").
  const std::string& sharing() const { return sharing_; }

  // This rank's part of a launch (without input/output).
  LamportRank RankParams() const;
  LamportStatus* status() const { return status_; }
  // Host-mapped abort word: set it to make the rank's spinning kernels give up.
  volatile int* abort_word() const { return abort_host_; }
  const volatile int* abort_device() const { return abort_device_; }
  // Resets the status word (after a failure has been reported).
  absl::Status ClearStatus(cudaStream_t stream);

  // Custom all-reduce regions (spec().custom_bytes > 0).
  bool custom() const { return spec_.custom_bytes > 0; }
  // Byte offset of the barrier flags in every rank's region.
  int64_t custom_flags_offset() const { return flags_offset_; }
  // The registration row a call captured as this rank's `index`-th graph
  // input reads (device memory; filled by RegisterGraphInputs*); null past
  // the table. SGLang hands the kernel the row's address at capture and
  // fills it after (custom_all_reduce_v2.py:447-451, 533-543).
  const void* const* graph_row(int64_t index) const;
  // Rows registered so far; captured inputs are numbered from here.
  int64_t graph_registered() const { return graph_registered_; }
  // Registers the inputs captured since the last registration, on every
  // member of a group in this process: `inputs[m]` holds member m's, in
  // capture order. Row graph_registered() + i of member m receives
  // inputs[0][i], ..., inputs[world-1][i]. FailedPrecondition, on every
  // member alike and before any row is written, when the members captured
  // different counts (the check vLLM PR #39791 added; without it rows pair
  // unrelated tensors, vLLM #39788).
  static absl::Status RegisterGraphInputsLocal(std::span<LamportWorkspace* const> group,
                                               const std::vector<std::vector<const void*>>& inputs);
  // The same for one member of a group spread over processes: its inputs'
  // CUDA IPC handles go over `exchange` (a count first, compared on every
  // rank), and every peer's are opened here.
  absl::Status RegisterGraphInputsShared(std::span<const void* const> mine, PeerExchange& exchange);

 private:
  LamportWorkspace() = default;
  absl::Status InitCommon(cudaStream_t stream);
  // Copies peers_ into the device-memory table the kernels read.
  absl::Status PublishPeerTable();

  WorkspaceSpec spec_;
  int rank_ = 0;
  int device_ = 0;
  int64_t buffer_elems_ = 0;
  size_t bytes_ = 0;  // three buffers
  std::string sharing_;
  void* buffers_ = nullptr;
  std::vector<void*> peers_;
  void** peer_table_ = nullptr;  // device memory: peers_, for the kernels
  int64_t flags_offset_ = 0;     // custom regions: where the flags start
  // Custom regions: the graph registration table (graph_rows x world
  // pointers, device memory), rows filled so far, and the peer inputs this
  // process opened through CUDA IPC.
  void** graph_table_ = nullptr;
  int64_t graph_registered_ = 0;
  std::vector<void*> ipc_opened_;
  protocol::LamportState* state_ = nullptr;
  LamportStatus* status_ = nullptr;
  volatile int* abort_host_ = nullptr;
  volatile int* abort_device_ = nullptr;
  // cuMem bookkeeping (shared workspaces).
  struct Mapping {
    uint64_t handle = 0;
    uintptr_t address = 0;
    size_t size = 0;
  };
  std::vector<Mapping> mappings_;
  bool owns_cudamalloc_ = false;
};

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_KERNELS_CUDA_WORKSPACE_H_
