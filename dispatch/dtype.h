// Element types of the tensors that lockstep all-reduces.

#ifndef LOCKSTEP_DISPATCH_DTYPE_H_
#define LOCKSTEP_DISPATCH_DTYPE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace lockstep {

// The element types of the all-reduce paths lockstep models. kUnset marks a
// workspace whose dtype was never configured; no tensor has it.
enum class DType : uint8_t { kUnset = 0, kBf16, kFp16, kFp32 };

// Bytes per element (0 for kUnset).
constexpr int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp32:
      return 4;
    case DType::kUnset:
      break;
  }
  return 0;
}

// "bf16", "fp16", "fp32" or "unset".
std::string_view DTypeName(DType dtype);

// Parses "bf16" / "bfloat16", "fp16" / "float16" / "half", "fp32" / "float32"
// / "float". Anything else is InvalidArgument naming the accepted spellings.
absl::StatusOr<DType> ParseDType(std::string_view name);

}  // namespace lockstep

#endif  // LOCKSTEP_DISPATCH_DTYPE_H_
