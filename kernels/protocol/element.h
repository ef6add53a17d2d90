// Element types and their bit-level helpers, for host and device: the −0
// sentinel of the Lamport protocols is a bit pattern, so the protocols work on
// raw bits and convert to float only to add.

#ifndef LOCKSTEP_KERNELS_PROTOCOL_ELEMENT_H_
#define LOCKSTEP_KERNELS_PROTOCOL_ELEMENT_H_

#include <stdint.h>
#include <string.h>

#include "kernels/protocol/platform.h"

namespace lockstep::protocol {

// Same numbering as lockstep::DType (dispatch/dtype.h), which device code
// cannot include.
enum class Elem : uint8_t { kBf16 = 1, kFp16 = 2, kFp32 = 3 };

LS_HD LS_INLINE constexpr int ElemBytes(Elem e) { return e == Elem::kFp32 ? 4 : 2; }

// Bit pattern of −0 in `e`: the Lamport sentinel.
LS_HD LS_INLINE constexpr uint32_t NegZeroBits(Elem e) {
  return e == Elem::kFp32 ? 0x80000000u : 0x8000u;
}
LS_HD LS_INLINE constexpr uint32_t SignBit(Elem e) { return NegZeroBits(e); }
LS_HD LS_INLINE constexpr uint32_t ExponentMask(Elem e) {
  return e == Elem::kFp32 ? 0x7f800000u : (e == Elem::kBf16 ? 0x7f80u : 0x7c00u);
}

// A subnormal: exponent all zero, mantissa not zero.
LS_HD LS_INLINE constexpr bool IsSubnormalBits(uint32_t bits, Elem e) {
  const uint32_t magnitude = bits & ~SignBit(e);
  return magnitude != 0 && (magnitude & ExponentMask(e)) == 0;
}

LS_HD LS_INLINE float BitsToFloat(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
LS_HD LS_INLINE uint32_t FloatToBits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
}

// IEEE half → float, exact (subnormals included).
LS_HD LS_INLINE float HalfBitsToFloat(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1fu) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    exponent = 113u;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      --exponent;
    }
    bits = sign | (exponent << 23) | ((mantissa & 0x3ffu) << 13);
  }
  return BitsToFloat(bits);
}

// float → IEEE half, round to nearest even (subnormals and overflow handled).
LS_HD LS_INLINE uint32_t FloatToHalfBits(float f) {
  const uint32_t x = FloatToBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to infinity
  if (abs < 0x38800000u) {                        // half subnormal or zero
    if (abs < 0x33000000u) return sign;           // below half of the smallest subnormal
    // value = mantissa * 2^(e - 150) = half * 2^-24, so half = mantissa >> (126 - e).
    const uint32_t shift = 126u - (abs >> 23);  // 14..24
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return sign | half;
  }
  uint32_t half = ((abs - 0x38000000u) >> 13);
  const uint32_t rest = abs & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | half;
}

// bfloat16 → float: the top half of a float.
LS_HD LS_INLINE float Bf16BitsToFloat(uint32_t b) { return BitsToFloat(b << 16); }

// float → bfloat16, round to nearest even; NaN stays NaN.
LS_HD LS_INLINE uint32_t FloatToBf16Bits(float f) {
  const uint32_t x = FloatToBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return ((x >> 16) | 0x40u) & 0xffffu;
  return ((x + 0x7fffu + ((x >> 16) & 1u)) >> 16) & 0xffffu;
}

LS_HD LS_INLINE float ToFloat(uint32_t bits, Elem e) {
  switch (e) {
    case Elem::kBf16:
      return Bf16BitsToFloat(bits);
    case Elem::kFp16:
      return HalfBitsToFloat(bits);
    case Elem::kFp32:
      break;
  }
  return BitsToFloat(bits);
}

LS_HD LS_INLINE uint32_t FromFloat(float f, Elem e) {
  switch (e) {
    case Elem::kBf16:
      return FloatToBf16Bits(f);
    case Elem::kFp16:
      return FloatToHalfBits(f);
    case Elem::kFp32:
      break;
  }
  return FloatToBits(f);
}

// Flush-to-zero as the hardware does it when FTZ is on: a subnormal becomes a
// zero of the same sign.
LS_HD LS_INLINE uint32_t FlushSubnormal(uint32_t bits, Elem e) {
  return IsSubnormalBits(bits, e) ? (bits & SignBit(e)) : bits;
}

}  // namespace lockstep::protocol

#endif  // LOCKSTEP_KERNELS_PROTOCOL_ELEMENT_H_
