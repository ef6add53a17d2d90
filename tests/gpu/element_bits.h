// Element values as bit patterns (one uint32_t per element, of the type's
// width), to and from device memory: what the kernel tests feed the kernels
// and compare bit for bit.

#ifndef LOCKSTEP_TESTS_GPU_ELEMENT_BITS_H_
#define LOCKSTEP_TESTS_GPU_ELEMENT_BITS_H_

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/protocol/element.h"

namespace lockstep::cuda {

// `elems` values uniform in [-1, 1), rounded to `e`, from `seed`.
inline std::vector<uint32_t> RandomBits(int64_t elems, protocol::Elem e, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint32_t> bits(static_cast<size_t>(elems));
  for (auto& b : bits) b = protocol::FromFloat(dist(gen), e);
  return bits;
}

// Copies `bits` (elements of `esize` bytes) to device memory at `dst`.
inline void UploadBits(void* dst, const std::vector<uint32_t>& bits, int esize) {
  std::vector<uint8_t> raw(bits.size() * static_cast<size_t>(esize));
  for (size_t i = 0; i < bits.size(); ++i) {
    std::memcpy(raw.data() + i * static_cast<size_t>(esize), &bits[i], static_cast<size_t>(esize));
  }
  cudaMemcpy(dst, raw.data(), raw.size(), cudaMemcpyHostToDevice);
}

// `elems` elements of `esize` bytes from device memory at `src`.
inline std::vector<uint32_t> DownloadBits(const void* src, int64_t elems, int esize) {
  std::vector<uint8_t> raw(static_cast<size_t>(elems * esize));
  cudaMemcpy(raw.data(), src, raw.size(), cudaMemcpyDeviceToHost);
  std::vector<uint32_t> bits(static_cast<size_t>(elems), 0);
  for (size_t i = 0; i < bits.size(); ++i) {
    std::memcpy(&bits[i], raw.data() + i * static_cast<size_t>(esize), static_cast<size_t>(esize));
  }
  return bits;
}

}  // namespace lockstep::cuda

#endif  // LOCKSTEP_TESTS_GPU_ELEMENT_BITS_H_
