#include "sim/memory/element_loops.h"

#include <bit>
#include <cmath>

namespace lockstep {
namespace {

namespace proto = protocol;

// Element i's bits in a contribution whose stream is `stream`: MurmurHash3's
// 32-bit finaliser of (stream, i), with 32-bit multiplies so that the loops
// over elements vectorise (a 64-bit mix per element made numeric inputs most
// of a numeric run's time), then uniform in [-1, 1) with 24 random bits
// (exact in float), rounded to the element type. Only i's low 32 bits enter.
// Every step is exact integer or float arithmetic: any instruction set gives
// the same bits.
template <proto::Elem E>
[[gnu::always_inline]] inline uint32_t ElementBits(uint32_t stream, uint32_t i) {
  uint32_t h = i * 0x9e3779b1u + stream;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  const float f = static_cast<float>(h >> 8) * 0x1p-23f - 1.0f;
  return proto::FromFloat(f, E);
}

// The kept elements of [first, end) into out (sampler.Count(first, end) of
// them). Inlined into each instruction set's copy below.
template <proto::Elem E>
[[gnu::always_inline]] inline void FillElementsOf(const NumericSampler& sampler, uint32_t stream,
                                                  int64_t first, int64_t end, uint32_t* out) {
  if (!sampler.all() && std::has_single_bit(static_cast<uint64_t>(sampler.block))) {
    // Sampled data keeps blocks of a few elements (8): one loop over the
    // kept elements, whose k-th is element Unrank(k) = (k / block) << shift
    // | k % block, in place of a short loop per block. Its low 32 bits need
    // only k's (block < stride: the bits above 32 shift out).
    const int64_t r0 = sampler.Rank(first);
    const int64_t n = sampler.Count(first, end);
    const int block_shift = std::countr_zero(static_cast<uint64_t>(sampler.block));
    const auto mask = static_cast<uint32_t>(sampler.block - 1);
    const int shift = sampler.shift;  // a local: `out` may alias an int
    for (int64_t j = 0; j < n; ++j) {
      const auto k = static_cast<uint32_t>(r0 + j);
      out[j] = ElementBits<E>(stream, ((k >> block_shift) << shift) | (k & mask));
    }
    return;
  }
  sampler.ForEachKept(first, end, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      out[i - lo] = ElementBits<E>(stream, static_cast<uint32_t>(i));
    out += hi - lo;
  });
}

// Adds elements `in` (n of them, as element type E) to a double-precision
// reference: their values to `sum`, their magnitudes to `magnitude`, element
// by element (no sum across elements: any vector width gives the same bits).
template <proto::Elem E>
[[gnu::always_inline]] inline void AddToReferenceOf(const uint32_t* in, size_t n, double* sum,
                                                    double* magnitude) {
  for (size_t i = 0; i < n; ++i) {
    const double x = static_cast<double>(proto::ToFloat(in[i], E));
    sum[i] += x;
    magnitude[i] += std::fabs(x);
  }
}

// How many of elements `bits` (n, as element type E) lie outside the
// reference's tolerance, n_eps * magnitude + 1e-30: one pass without an exit.
template <proto::Elem E>
[[gnu::always_inline]] inline int64_t CountOutsideOf(const uint32_t* bits, int64_t n,
                                                     const double* ref, const double* magnitude,
                                                     double n_eps) {
  int64_t count = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double got = static_cast<double>(proto::ToFloat(bits[k], E));
    count += static_cast<int64_t>(!(std::fabs(got - ref[k]) <= n_eps * magnitude[k] + 1e-30));
  }
  return count;
}

// `fn<E>(args...)` with E the element type `e` as a constant.
#define LOCKSTEP_BY_ELEM(e, fn, ...)              \
  switch (e) {                                    \
    case proto::Elem::kBf16:                      \
      return fn<proto::Elem::kBf16>(__VA_ARGS__); \
    case proto::Elem::kFp16:                      \
      return fn<proto::Elem::kFp16>(__VA_ARGS__); \
    case proto::Elem::kFp32:                      \
      break;                                      \
  }                                               \
  return fn<proto::Elem::kFp32>(__VA_ARGS__)

void FillElementsBaseline(proto::Elem e, const NumericSampler& sampler, uint32_t stream,
                          int64_t first, int64_t end, uint32_t* out) {
  LOCKSTEP_BY_ELEM(e, FillElementsOf, sampler, stream, first, end, out);
}
void AddToReferenceBaseline(proto::Elem e, const uint32_t* in, size_t n, double* sum,
                            double* magnitude) {
  LOCKSTEP_BY_ELEM(e, AddToReferenceOf, in, n, sum, magnitude);
}
int64_t CountOutsideBaseline(proto::Elem e, const uint32_t* bits, int64_t n, const double* ref,
                             const double* magnitude, double n_eps) {
  LOCKSTEP_BY_ELEM(e, CountOutsideOf, bits, n, ref, magnitude, n_eps);
}

#if defined(__x86_64__)
// The same loops, compiled for AVX2 (8 32-bit or 4 double lanes). The target
// leaves out FMA: no multiply-add is fused, as in the baseline copy.
[[gnu::target("avx2")]] void FillElementsAvx2(proto::Elem e, const NumericSampler& sampler,
                                              uint32_t stream, int64_t first, int64_t end,
                                              uint32_t* out) {
  LOCKSTEP_BY_ELEM(e, FillElementsOf, sampler, stream, first, end, out);
}
[[gnu::target("avx2")]] void AddToReferenceAvx2(proto::Elem e, const uint32_t* in, size_t n,
                                                double* sum, double* magnitude) {
  LOCKSTEP_BY_ELEM(e, AddToReferenceOf, in, n, sum, magnitude);
}
[[gnu::target("avx2")]] int64_t CountOutsideAvx2(proto::Elem e, const uint32_t* bits, int64_t n,
                                                 const double* ref, const double* magnitude,
                                                 double n_eps) {
  LOCKSTEP_BY_ELEM(e, CountOutsideOf, bits, n, ref, magnitude, n_eps);
}
#endif

#undef LOCKSTEP_BY_ELEM

}  // namespace

bool CpuRuns(ElementIsa isa) {
  switch (isa) {
    case ElementIsa::kBaseline:
      return true;
    case ElementIsa::kAvx2:
#if defined(__x86_64__)
      return __builtin_cpu_supports("avx2");
#else
      return false;
#endif
  }
  return false;
}

ElementIsa BestElementIsa() {
  static const ElementIsa best =
      CpuRuns(ElementIsa::kAvx2) ? ElementIsa::kAvx2 : ElementIsa::kBaseline;
  return best;
}

void FillElements(ElementIsa isa, protocol::Elem e, const NumericSampler& sampler, uint32_t stream,
                  int64_t first, int64_t end, uint32_t* out) {
#if defined(__x86_64__)
  if (isa == ElementIsa::kAvx2) return FillElementsAvx2(e, sampler, stream, first, end, out);
#endif
  (void)isa;
  FillElementsBaseline(e, sampler, stream, first, end, out);
}

void AddToReference(ElementIsa isa, protocol::Elem e, const uint32_t* in, size_t n, double* sum,
                    double* magnitude) {
#if defined(__x86_64__)
  if (isa == ElementIsa::kAvx2) return AddToReferenceAvx2(e, in, n, sum, magnitude);
#endif
  (void)isa;
  AddToReferenceBaseline(e, in, n, sum, magnitude);
}

int64_t CountOutside(ElementIsa isa, protocol::Elem e, const uint32_t* bits, int64_t n,
                     const double* ref, const double* magnitude, double n_eps) {
#if defined(__x86_64__)
  if (isa == ElementIsa::kAvx2) return CountOutsideAvx2(e, bits, n, ref, magnitude, n_eps);
#endif
  (void)isa;
  return CountOutsideBaseline(e, bits, n, ref, magnitude, n_eps);
}

}  // namespace lockstep
