#include "kernels/cuda/workspace.h"

#include <cuda.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_format.h"
#include "kernels/cuda/allreduce_kernels.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/protocol/two_shot.h"

namespace lockstep::cuda {
namespace {

// The driver functions the cuMem path needs, fetched through the runtime so
// that nothing links libcuda.so (hosts without a driver still load the
// binaries and skip).
struct Driver {
  CUresult (*cuMemCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                          unsigned long long);
  CUresult (*cuMemRelease)(CUmemGenericAllocationHandle);
  CUresult (*cuMemExportToShareableHandle)(void*, CUmemGenericAllocationHandle,
                                           CUmemAllocationHandleType, unsigned long long);
  CUresult (*cuMemImportFromShareableHandle)(CUmemGenericAllocationHandle*, void*,
                                             CUmemAllocationHandleType);
  CUresult (*cuMemAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*cuMemAddressFree)(CUdeviceptr, size_t);
  CUresult (*cuMemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
  CUresult (*cuMemUnmap)(CUdeviceptr, size_t);
  CUresult (*cuMemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  CUresult (*cuMemGetAllocationGranularity)(size_t*, const CUmemAllocationProp*,
                                            CUmemAllocationGranularity_flags);
  CUresult (*cuDeviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuMemGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr);
};

absl::StatusOr<const Driver*> GetDriver() {
  static Driver driver;
  static absl::Status status = [] {
    auto load = [](const char* name, void** fn) -> absl::Status {
      cudaDriverEntryPointQueryResult found;
      const cudaError_t e =
          cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &found);
      if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || *fn == nullptr) {
        return absl::UnavailableError(absl::StrFormat("CUDA driver function %s unavailable", name));
      }
      return absl::OkStatus();
    };
#define LOAD(f)                                                                  \
  if (absl::Status s = load(#f, reinterpret_cast<void**>(&driver.f)); !s.ok()) { \
    return s;                                                                    \
  }
    LOAD(cuMemCreate)
    LOAD(cuMemRelease)
    LOAD(cuMemExportToShareableHandle)
    LOAD(cuMemImportFromShareableHandle)
    LOAD(cuMemAddressReserve)
    LOAD(cuMemAddressFree)
    LOAD(cuMemMap)
    LOAD(cuMemUnmap)
    LOAD(cuMemSetAccess)
    LOAD(cuMemGetAllocationGranularity)
    LOAD(cuDeviceGetAttribute)
    LOAD(cuGetErrorName)
    LOAD(cuMemGetAddressRange)
#undef LOAD
    return absl::OkStatus();
  }();
  if (!status.ok()) return status;
  return &driver;
}

absl::Status DriverError(const Driver& d, const char* what, CUresult r) {
  const char* name = "?";
  d.cuGetErrorName(r, &name);
  return absl::InternalError(absl::StrFormat("%s: %s", what, name));
}

#define LS_CU(d, expr)                              \
  do {                                              \
    if (CUresult r_ = (expr); r_ != CUDA_SUCCESS) { \
      return DriverError(d, #expr, r_);             \
    }                                               \
  } while (0)

int64_t BufferElems(const WorkspaceSpec& spec) {
  // Custom: the staging buffer's elements.
  if (spec.custom_bytes > 0) return spec.custom_bytes / protocol::ElemBytes(spec.elem);
  // Room for either algorithm at full capacity, rounded to whole vectors.
  const int64_t elems = protocol::LamportBufferElems(spec.world, spec.max_tokens * spec.hidden);
  return (elems + 7) / 8 * 8;
}

// Where a custom region's flags start: after the staging buffer, on a
// 128-byte line of their own.
int64_t FlagsOffset(const WorkspaceSpec& spec) {
  return spec.custom_bytes > 0
             ? CustomRegionLayout(spec.custom_bytes, spec.custom_push_bytes, spec.world).flags
             : 0;
}

// Bytes of one rank's region: three Lamport buffers, or a custom staging
// buffer and its flags.
size_t RegionBytes(const WorkspaceSpec& spec) {
  if (spec.custom_bytes > 0) {
    return static_cast<size_t>(
        CustomRegionLayout(spec.custom_bytes, spec.custom_push_bytes, spec.world).bytes);
  }
  return static_cast<size_t>(3 * BufferElems(spec) * protocol::ElemBytes(spec.elem));
}

// Refuses a spec no kernel serves, on every member alike, before anything
// is allocated or exchanged.
absl::Status CheckSpec(const WorkspaceSpec& spec) {
  if (!KernelServesWorld(spec.world)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a workspace of %d ranks: the kernels serve 1 to %d", spec.world, kMaxPeers));
  }
  if (spec.custom_bytes > 0) {
    CustomShape shape;
    shape.world = spec.world;
    shape.bytes = spec.custom_bytes;
    if (const std::string why = CustomShapeRefusal(shape); !why.empty()) {
      return absl::InvalidArgumentError("custom all-reduce region: " + why);
    }
  }
  if (spec.custom_push_bytes < 0 || spec.custom_push_bytes % 16 != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("custom push slots of %d bytes: must be a non-negative multiple of 16",
                        spec.custom_push_bytes));
  }
  if (spec.graph_rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d graph registration rows: must be >= 0", spec.graph_rows));
  }
  return absl::OkStatus();
}

// Exchanged per rank for a POSIX file descriptor handle.
struct FdHandle {
  int32_t pid;
  int32_t fd;
};

}  // namespace

LamportWorkspace::~LamportWorkspace() {
  for (void* p : ipc_opened_) cudaIpcCloseMemHandle(p);
  if (graph_table_ != nullptr) cudaFree(graph_table_);
  if (state_ != nullptr) cudaFree(state_);
  if (status_ != nullptr) cudaFree(status_);
  if (peer_table_ != nullptr) cudaFree(peer_table_);
  if (abort_host_ != nullptr) cudaFreeHost(const_cast<int*>(abort_host_));
  if (owns_cudamalloc_ && buffers_ != nullptr) cudaFree(buffers_);
  absl::StatusOr<const Driver*> d = GetDriver();
  if (!d.ok()) return;
  for (const Mapping& m : mappings_) {
    (*d)->cuMemUnmap(m.address, m.size);
    (*d)->cuMemAddressFree(m.address, m.size);
    (*d)->cuMemRelease(m.handle);
  }
}

absl::Status LamportWorkspace::InitCommon(cudaStream_t stream) {
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&state_, sizeof(protocol::LamportState)));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(state_, 0, sizeof(protocol::LamportState), stream));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&status_, sizeof(LamportStatus)));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(status_, 0, sizeof(LamportStatus), stream));
  int* host = nullptr;
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaHostAlloc(&host, sizeof(int), cudaHostAllocMapped));
  *host = 0;
  abort_host_ = host;
  int* dev = nullptr;
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaHostGetDevicePointer(&dev, host, 0));
  abort_device_ = dev;
  flags_offset_ = FlagsOffset(spec_);
  if (custom()) {
    if (spec_.graph_rows > 0) {
      const size_t table = sizeof(void*) * static_cast<size_t>(spec_.graph_rows * spec_.world);
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&graph_table_, table));
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(graph_table_, 0, table, stream));
    }
    // The flags start at epoch 0: the first call's are 1.
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(buffers_, 0, RegionBytes(spec_), stream));
    return absl::OkStatus();
  }
  return FillSentinel(buffers_, 3 * buffer_elems_, spec_.elem, stream);
}

const void* const* LamportWorkspace::graph_row(int64_t index) const {
  if (graph_table_ == nullptr || index < 0 || index >= spec_.graph_rows) return nullptr;
  return graph_table_ + index * spec_.world;
}

namespace {

// Fills rows [first, first + count) of `table` (world pointers per row).
absl::Status WriteRows(void** table, int64_t first, const std::vector<void*>& rows) {
  LOCKSTEP_RETURN_IF_CUDA_ERROR(
      cudaMemcpy(table + first, rows.data(), sizeof(void*) * rows.size(), cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

absl::Status CheckRows(const LamportWorkspace& ws, int64_t count) {
  if (!ws.custom() || ws.spec().graph_rows == 0) {
    return absl::FailedPreconditionError(
        "graph inputs registered on a workspace without a registration table (a custom "
        "all-reduce region with graph_rows > 0)");
  }
  if (ws.graph_registered() + count > ws.spec().graph_rows) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "%d graph inputs after %d registered overflow the table of %d rows (raise graph_rows)",
        count, ws.graph_registered(), ws.spec().graph_rows));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LamportWorkspace::RegisterGraphInputsLocal(
    std::span<LamportWorkspace* const> group, const std::vector<std::vector<const void*>>& inputs) {
  if (inputs.size() != group.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d members' captured inputs for a group of %d", inputs.size(), group.size()));
  }
  std::string counts;
  bool equal = true;
  for (size_t m = 0; m < inputs.size(); ++m) {
    counts += absl::StrFormat("%srank %d: %d", m == 0 ? "" : ", ", m, inputs[m].size());
    equal &= inputs[m].size() == inputs.front().size();
  }
  if (!equal) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the members captured different numbers of custom all-reduce graph inputs (%s); "
        "registering them by position would pair unrelated tensors",
        counts));
  }
  const int64_t count = inputs.empty() ? 0 : static_cast<int64_t>(inputs.front().size());
  for (LamportWorkspace* ws : group) LOCKSTEP_RETURN_IF_ERROR(CheckRows(*ws, count));
  for (LamportWorkspace* ws : group) {
    std::vector<void*> rows;
    for (int64_t i = 0; i < count; ++i) {
      for (size_t p = 0; p < inputs.size(); ++p) {
        rows.push_back(const_cast<void*>(inputs[p][static_cast<size_t>(i)]));
      }
    }
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(ws->device_));
    LOCKSTEP_RETURN_IF_ERROR(
        WriteRows(ws->graph_table_, ws->graph_registered_ * ws->world(), rows));
    ws->graph_registered_ += count;
  }
  return absl::OkStatus();
}

absl::Status LamportWorkspace::RegisterGraphInputsShared(std::span<const void* const> mine,
                                                         PeerExchange& exchange) {
  absl::StatusOr<const Driver*> driver = GetDriver();
  if (!driver.ok()) return driver.status();
  const Driver& d = **driver;
  // The counts first, on every rank: a difference fails all of them alike.
  absl::StatusOr<std::vector<int64_t>> counts =
      AllGatherValue(exchange, static_cast<int64_t>(mine.size()));
  if (!counts.ok()) return counts.status();
  std::string listed;
  bool equal = true;
  for (size_t r = 0; r < counts->size(); ++r) {
    listed += absl::StrFormat("%srank %d: %d", r == 0 ? "" : ", ", r, (*counts)[r]);
    equal &= (*counts)[r] == counts->front();
  }
  if (!equal) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "the members captured different numbers of custom all-reduce graph inputs (%s); "
        "registering them by position would pair unrelated tensors",
        listed));
  }
  const auto count = static_cast<int64_t>(mine.size());
  LOCKSTEP_RETURN_IF_ERROR(CheckRows(*this, count));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(device_));
  struct IpcInput {
    cudaIpcMemHandle_t handle;
    uint64_t offset;  // of the input within its allocation
  };
  std::vector<void*> rows(static_cast<size_t>(count * world()), nullptr);
  for (int64_t i = 0; i < count; ++i) {
    const void* input = mine[static_cast<size_t>(i)];
    CUdeviceptr base = 0;
    size_t size = 0;
    LS_CU(d, d.cuMemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(input)));
    IpcInput in{};
    in.offset = reinterpret_cast<CUdeviceptr>(input) - base;
    LOCKSTEP_RETURN_IF_CUDA_ERROR(
        cudaIpcGetMemHandle(&in.handle, reinterpret_cast<void*>(static_cast<uintptr_t>(base))));
    absl::StatusOr<std::vector<IpcInput>> all = AllGatherValue(exchange, in);
    if (!all.ok()) return all.status();
    for (int r = 0; r < world(); ++r) {
      void* at = const_cast<void*>(input);
      if (r != rank_) {
        void* opened = nullptr;
        LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaIpcOpenMemHandle(
            &opened, (*all)[static_cast<size_t>(r)].handle, cudaIpcMemLazyEnablePeerAccess));
        ipc_opened_.push_back(opened);
        at = static_cast<char*>(opened) + (*all)[static_cast<size_t>(r)].offset;
      }
      rows[static_cast<size_t>(i * world() + r)] = at;
    }
  }
  LOCKSTEP_RETURN_IF_ERROR(WriteRows(graph_table_, graph_registered_ * world(), rows));
  graph_registered_ += count;
  return absl::OkStatus();
}

absl::Status LamportWorkspace::ClearStatus(cudaStream_t stream) {
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(status_, 0, sizeof(LamportStatus), stream));
  return absl::OkStatus();
}

absl::Status LamportWorkspace::PublishPeerTable() {
  const size_t bytes = sizeof(void*) * peers_.size();
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(device_));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&peer_table_, bytes));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(
      cudaMemcpy(peer_table_, peers_.data(), bytes, cudaMemcpyHostToDevice));
  return absl::OkStatus();
}

LamportRank LamportWorkspace::RankParams() const {
  LamportRank r;
  r.rank = rank_;
  r.my_buffers = buffers_;
  r.peer_buffers = peer_table_;
  r.state = state_;
  return r;
}

absl::StatusOr<std::vector<std::unique_ptr<LamportWorkspace>>> LamportWorkspace::CreateLocal(
    const WorkspaceSpec& spec, std::span<const int> devices) {
  if (spec.world != static_cast<int>(devices.size()) || spec.world < 1 || spec.world > kMaxPeers) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a local workspace group needs one device per rank (world %d, %d devices, at most %d)",
        spec.world, devices.size(), kMaxPeers));
  }
  LOCKSTEP_RETURN_IF_ERROR(CheckSpec(spec));
  std::vector<std::unique_ptr<LamportWorkspace>> group;
  const int64_t elems = BufferElems(spec);
  for (int r = 0; r < spec.world; ++r) {
    auto ws = std::unique_ptr<LamportWorkspace>(new LamportWorkspace());
    ws->spec_ = spec;
    ws->rank_ = r;
    ws->device_ = devices[static_cast<size_t>(r)];
    ws->buffer_elems_ = elems;
    ws->bytes_ = RegionBytes(spec);
    ws->sharing_ = "device";
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(ws->device_));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaMalloc(&ws->buffers_, ws->bytes_));
    ws->owns_cudamalloc_ = true;
    if (absl::Status s = ws->InitCommon(nullptr); !s.ok()) return s;
    group.push_back(std::move(ws));
  }
  for (int a = 0; a < spec.world; ++a) {
    for (int b = 0; b < spec.world; ++b) {
      const int da = devices[static_cast<size_t>(a)], db = devices[static_cast<size_t>(b)];
      if (da == db) continue;
      int can = 0;
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaDeviceCanAccessPeer(&can, da, db));
      if (!can) {
        return absl::FailedPreconditionError(
            absl::StrFormat("GPU %d cannot map GPU %d's memory (no peer access)", da, db));
      }
      LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(da));
      const cudaError_t e = cudaDeviceEnablePeerAccess(db, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
        LOCKSTEP_RETURN_IF_CUDA_ERROR(e);
      cudaGetLastError();
    }
  }
  for (auto& ws : group) {
    for (auto& peer : group) ws->peers_.push_back(peer->buffers_);
    if (absl::Status s = ws->PublishPeerTable(); !s.ok()) return s;
  }
  for (auto& ws : group) {
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(ws->device_));
    LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaDeviceSynchronize());
  }
  return group;
}

absl::StatusOr<std::unique_ptr<LamportWorkspace>> LamportWorkspace::CreateShared(
    const WorkspaceSpec& spec, int device, PeerExchange& exchange) {
  absl::StatusOr<const Driver*> driver = GetDriver();
  if (!driver.ok()) return driver.status();
  const Driver& d = **driver;
  if (exchange.world() != spec.world) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the exchange spans %d ranks but the workspace %d", exchange.world(), spec.world));
  }
  // Every member refuses alike, before anything is exchanged.
  LOCKSTEP_RETURN_IF_ERROR(CheckSpec(spec));
  auto ws = std::unique_ptr<LamportWorkspace>(new LamportWorkspace());
  ws->spec_ = spec;
  ws->rank_ = exchange.rank();
  ws->device_ = device;
  ws->buffer_elems_ = BufferElems(spec);
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaSetDevice(device));
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaFree(nullptr));  // make the primary context current

  int fabric = 0;
  LS_CU(d,
        d.cuDeviceGetAttribute(&fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, device));
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes =
      fabric ? CU_MEM_HANDLE_TYPE_FABRIC : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t granularity = 0;
  LS_CU(d,
        d.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  const size_t raw = RegionBytes(spec);
  const size_t size = (raw + granularity - 1) / granularity * granularity;
  ws->bytes_ = size;

  CUmemGenericAllocationHandle mine = 0;
  CUresult created = d.cuMemCreate(&mine, size, &prop, 0);
  std::string why_not_fabric = fabric ? "" : " (the device reports no FABRIC handle support)";
  if (created != CUDA_SUCCESS && fabric) {
    // FABRIC advertised but refused (no IMEX channel): fall back to POSIX fds.
    const char* name = "?";
    d.cuGetErrorName(created, &name);
    why_not_fabric = absl::StrFormat(" (FABRIC advertised, cuMemCreate refused it: %s)", name);
    fabric = 0;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    created = d.cuMemCreate(&mine, size, &prop, 0);
  }
  if (created != CUDA_SUCCESS) return DriverError(d, "cuMemCreate", created);
  ws->sharing_ = fabric ? "fabric" : "posix_fd" + why_not_fabric;

  // Export, exchange and import every rank's handle.
  std::vector<CUmemGenericAllocationHandle> handles(static_cast<size_t>(spec.world));
  handles[static_cast<size_t>(ws->rank_)] = mine;
  if (fabric) {
    CUmemFabricHandle h;
    LS_CU(d, d.cuMemExportToShareableHandle(&h, mine, CU_MEM_HANDLE_TYPE_FABRIC, 0));
    absl::StatusOr<std::vector<CUmemFabricHandle>> all = AllGatherValue(exchange, h);
    if (!all.ok()) return all.status();
    for (int r = 0; r < spec.world; ++r) {
      if (r == ws->rank_) continue;
      LS_CU(d, d.cuMemImportFromShareableHandle(&handles[static_cast<size_t>(r)],
                                                &(*all)[static_cast<size_t>(r)],
                                                CU_MEM_HANDLE_TYPE_FABRIC));
    }
  } else {
    int fd = -1;
    LS_CU(d,
          d.cuMemExportToShareableHandle(&fd, mine, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    absl::StatusOr<std::vector<FdHandle>> all = AllGatherValue(exchange, FdHandle{getpid(), fd});
    if (!all.ok()) {
      close(fd);
      return all.status();
    }
    for (int r = 0; r < spec.world; ++r) {
      if (r == ws->rank_) continue;
      const FdHandle& peer = (*all)[static_cast<size_t>(r)];
      // Duplicate the peer's descriptor into this process (Linux 5.6+).
      const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, peer.pid, 0));
      const int local =
          pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, peer.fd, 0));
      if (pidfd >= 0) close(pidfd);
      if (local < 0) {
        close(fd);
        return absl::FailedPreconditionError(absl::StrFormat(
            "cannot obtain rank %d's memory handle (pidfd_getfd of pid %d fd %d: %s); run the "
            "ranks as one user on a kernel >= 5.6, or on a device with FABRIC handles",
            r, peer.pid, peer.fd, std::strerror(errno)));
      }
      const CUresult imported = d.cuMemImportFromShareableHandle(
          &handles[static_cast<size_t>(r)], reinterpret_cast<void*>(static_cast<uintptr_t>(local)),
          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
      close(local);
      if (imported != CUDA_SUCCESS) {
        close(fd);
        return DriverError(d, "cuMemImportFromShareableHandle", imported);
      }
    }
    close(fd);
  }
  // Map every rank's allocation into this process with read-write access.
  CUmemAccessDesc access = {};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int r = 0; r < spec.world; ++r) {
    CUdeviceptr address = 0;
    LS_CU(d, d.cuMemAddressReserve(&address, size, granularity, 0, 0));
    LS_CU(d, d.cuMemMap(address, size, 0, handles[static_cast<size_t>(r)], 0));
    LS_CU(d, d.cuMemSetAccess(address, size, &access, 1));
    ws->mappings_.push_back({handles[static_cast<size_t>(r)], address, size});
    ws->peers_.push_back(reinterpret_cast<void*>(address));
  }
  ws->buffers_ = ws->peers_[static_cast<size_t>(ws->rank_)];
  if (absl::Status s = ws->PublishPeerTable(); !s.ok()) return s;
  if (absl::Status s = ws->InitCommon(nullptr); !s.ok()) return s;
  LOCKSTEP_RETURN_IF_CUDA_ERROR(cudaDeviceSynchronize());
  // Every rank's buffers hold the sentinel before anyone pushes.
  if (absl::StatusOr<std::vector<uint8_t>> done = AllGatherValue(exchange, uint8_t{1});
      !done.ok()) {
    return done.status();
  }
  return ws;
}

}  // namespace lockstep::cuda
