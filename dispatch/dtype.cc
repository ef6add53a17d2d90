#include "dispatch/dtype.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace lockstep {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp32:
      return "fp32";
    case DType::kUnset:
      break;
  }
  return "unset";
}

absl::StatusOr<DType> ParseDType(std::string_view name) {
  if (name == "bf16" || name == "bfloat16") return DType::kBf16;
  if (name == "fp16" || name == "float16" || name == "half") return DType::kFp16;
  if (name == "fp32" || name == "float32" || name == "float") return DType::kFp32;
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown dtype '%s': use bf16, fp16 or fp32", name));
}

}  // namespace lockstep
