// The per-element loops of numeric data (`workload.data: numeric` and
// `sampled`): making a contribution's elements, adding contributions to the
// double-precision reference, and counting the elements outside its
// tolerance. Each comes in a copy for x86-64's baseline instruction set
// (SSE2: two doubles a vector, no 32-bit vector multiply) and, on x86-64, one
// for AVX2, chosen at run time. The copies give the same results bit for bit:
// each step is exact integer arithmetic or a floating-point operation on one
// element (no sum across elements, no fused multiply-add), which any vector
// width computes alike (ElementLoopsTest compares them).

#ifndef LOCKSTEP_SIM_MEMORY_ELEMENT_LOOPS_H_
#define LOCKSTEP_SIM_MEMORY_ELEMENT_LOOPS_H_

#include <cstddef>
#include <cstdint>

#include "kernels/protocol/element.h"
#include "sim/memory/value.h"

namespace lockstep {

enum class ElementIsa : uint8_t { kBaseline, kAvx2 };

// Whether this CPU runs `isa`'s copies (kBaseline: always).
bool CpuRuns(ElementIsa isa);
// The fastest copy this CPU runs.
ElementIsa BestElementIsa();

// The kept elements (`sampler`) of [first, end) of the contribution whose
// stream is `stream`, as element type `e`, into out (sampler.Count(first,
// end) of them). Element i is a pure function of (stream, i).
void FillElements(ElementIsa isa, protocol::Elem e, const NumericSampler& sampler, uint32_t stream,
                  int64_t first, int64_t end, uint32_t* out);

// Adds `n` elements `in` (of type `e`) to a reference: their values to
// sum[i], their magnitudes to magnitude[i].
void AddToReference(ElementIsa isa, protocol::Elem e, const uint32_t* in, size_t n, double* sum,
                    double* magnitude);

// How many of `n` elements `bits` (of type `e`) differ from ref[k] by more
// than n_eps * magnitude[k] + 1e-30.
int64_t CountOutside(ElementIsa isa, protocol::Elem e, const uint32_t* bits, int64_t n,
                     const double* ref, const double* magnitude, double n_eps);

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_ELEMENT_LOOPS_H_
