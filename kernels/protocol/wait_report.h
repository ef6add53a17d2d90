// What a call that could not complete reports, written once for the GPU
// backends (kernels/cuda/, hw/) and the simulated ones (sim/), so that a wait
// the simulator ends in virtual time reads exactly as the one the GPU ends
// in real time. Host code only (Abseil): the protocols themselves stay in the
// headers beside it, free of the standard library.
//
//   LamportFailure(ProtocolError::kWaitExpired, 0, 1, 2, 4096, 10'000'000'000)
//   // DEADLINE_EXCEEDED: fused all-reduce: rank 0 waited 10.000 s for rank 1's
//   // push into buffer 2 at element 4096; rank 1 never arrived

#ifndef LOCKSTEP_KERNELS_PROTOCOL_WAIT_REPORT_H_
#define LOCKSTEP_KERNELS_PROTOCOL_WAIT_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/protocol/lamport.h"

namespace lockstep::protocol {

// A fused (Lamport) call that failed with `error` on `rank`, waiting for
// `waited` (both named as the caller names ranks: global ranks), in `buffer`
// at element `offset`, after `elapsed_ns`. OK for ProtocolError::kNone.
inline absl::Status LamportFailure(ProtocolError error, int rank, int waited, uint32_t buffer,
                                   int64_t offset, uint64_t elapsed_ns) {
  switch (error) {
    case ProtocolError::kNone:
      return absl::OkStatus();
    case ProtocolError::kWaitExpired:
      return absl::DeadlineExceededError(absl::StrFormat(
          "fused all-reduce: rank %d waited %.3f s for rank %d's push into buffer %d at element "
          "%d; rank %d never arrived",
          rank, static_cast<double>(elapsed_ns) / 1e9, waited, buffer, offset, waited));
    case ProtocolError::kClearFailed:
      return absl::DataLossError(absl::StrFormat(
          "fused all-reduce: rank %d's Lamport buffer %d still held data at element %d after it "
          "was cleared; its next use would read stale values as fresh",
          rank, buffer, offset));
    case ProtocolError::kAborted:
      break;
  }
  return absl::AbortedError(absl::StrFormat(
      "fused all-reduce: rank %d stopped by the host's abort word while waiting for rank %d's "
      "push into buffer %d at element %d",
      rank, waited, buffer, offset));
}

// A custom all-reduce call that failed with `error` on `rank` at the
// barrier `phase` (kBarrierStart / kBarrierEnd, block_barrier.h) of its
// call `epoch`, waiting for `waited`'s flag, after `elapsed_ns`.
inline absl::Status CustomBarrierFailure(ProtocolError error, int rank, int waited, uint32_t phase,
                                         uint64_t epoch, uint64_t elapsed_ns) {
  const char* barrier = phase == 0 ? "start" : "end";
  switch (error) {
    case ProtocolError::kNone:
      return absl::OkStatus();
    case ProtocolError::kWaitExpired:
      return absl::DeadlineExceededError(absl::StrFormat(
          "custom all-reduce: rank %d waited %.3f s at the %s barrier of call %d for rank %d's "
          "flag; rank %d never arrived",
          rank, static_cast<double>(elapsed_ns) / 1e9, barrier, epoch, waited, waited));
    case ProtocolError::kClearFailed:
    case ProtocolError::kAborted:
      break;
  }
  return absl::AbortedError(absl::StrFormat(
      "custom all-reduce: rank %d stopped by the host's abort word at the %s barrier of call %d "
      "while waiting for rank %d's flag",
      rank, barrier, epoch, waited));
}

// A v2 custom all-reduce call (kernels/protocol/custom_v2.h) that gave up:
// a 1shot_push poll of `waited`'s slot (`half`, at element `at`), or a pull
// barrier phase (`waited` -1: the count names no writer; `at`: the arrivals
// it saw of the world it needed).
inline absl::Status CustomV2Failure(ProtocolError error, std::string_view algorithm, int rank,
                                    int waited, uint32_t phase_or_half, int64_t at, int world,
                                    uint64_t elapsed_ns) {
  if (error == ProtocolError::kNone) return absl::OkStatus();
  const double seconds = static_cast<double>(elapsed_ns) / 1e9;
  std::string what;
  if (waited >= 0) {
    what = absl::StrFormat(
        "polling its slot of rank %d (half %d) at element %d; rank %d's data "
        "never landed",
        waited, phase_or_half, at, waited);
  } else {
    what = absl::StrFormat("at phase %d of the counting barrier, which had %d of %d arrivals",
                           phase_or_half, at, world);
  }
  if (error == ProtocolError::kWaitExpired) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "custom all-reduce (%s): rank %d waited %.3f s %s", algorithm, rank, seconds, what));
  }
  return absl::AbortedError(
      absl::StrFormat("custom all-reduce (%s): rank %d stopped by the host's abort word %s",
                      algorithm, rank, what));
}

// An NCCL call (`what`: "all-reduce", "reduce-scatter", "all-gather") on the
// communicator of `group` ("tp [0,1]") that a peer did not join within the
// watchdog's `budget_ns`; `seq` is the dispatch core's call number on the
// group, when the call is a dispatched one.
inline absl::Status WatchdogExpired(std::string_view what, std::string_view group,
                                    std::optional<uint64_t> seq, uint64_t budget_ns) {
  return absl::DeadlineExceededError(absl::StrFormat(
      "NCCL %s on %s%s did not complete within %.3f s; the watchdog aborted the communicator "
      "(a peer never joined the call)",
      what, group, seq ? absl::StrFormat(" (call %d of the group)", *seq) : "",
      static_cast<double>(budget_ns) / 1e9));
}

// A host-side exchange (`what`: "activations from rank 3") a peer did not
// take part in before the watchdog's deadline.
inline absl::Status PeerMissedDeadline(std::string_view what) {
  return absl::DeadlineExceededError(
      absl::StrFormat("%s: a peer did not take part before the watchdog's deadline", what));
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_WAIT_REPORT_H_
