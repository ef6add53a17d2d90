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
