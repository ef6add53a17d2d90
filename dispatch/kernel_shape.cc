#include "dispatch/kernel_shape.h"

#include "absl/strings/str_format.h"

namespace lockstep {

std::string LamportShapeRefusal(const LamportShape& s) {
  if (!KernelServesWorld(s.world)) {
    return absl::StrFormat("world %d: the kernels serve 1 to %d ranks", s.world, kKernelMaxPeers);
  }
  if (s.elem_bytes <= 0 || s.elems <= 0 || (s.elems * s.elem_bytes) % kKernelVectorBytes != 0) {
    return absl::StrFormat(
        "%d elements of %d bytes: the kernels move %d-byte vectors, so a message must be a "
        "positive whole number of them",
        s.elems, s.elem_bytes, kKernelVectorBytes);
  }
  if (s.rms_norm) {
    if (s.two_shot) return "the fused AR + RMSNorm kernel is one-shot only";
    if (!RowIsWholeVectors(s.hidden, s.elem_bytes) || s.elems % s.hidden != 0) {
      return absl::StrFormat(
          "hidden %d of %d-byte elements: the norm needs whole rows of %d-byte "
          "vectors",
          s.hidden, s.elem_bytes, kKernelVectorBytes);
    }
  }
  return "";
}

std::string CustomShapeRefusal(const CustomShape& s) {
  if (s.world < 1 || s.world > kCustomKernelMaxPeers) {
    return absl::StrFormat("world %d: the custom all-reduce kernel serves 1 to %d ranks", s.world,
                           kCustomKernelMaxPeers);
  }
  if (s.bytes <= 0 || s.bytes % kKernelVectorBytes != 0) {
    return absl::StrFormat(
        "%d bytes: the custom all-reduce moves %d-byte vectors, so a message must be a positive "
        "whole number of them",
        s.bytes, kKernelVectorBytes);
  }
  return "";
}

}  // namespace lockstep
