// Portability macros for code compiled both by the host compiler (simulator)
// and by nvcc (CUDA kernels). Everything in kernels/protocol/ is C++17 and
// uses only what both sides have: no exceptions, no allocation, no std::.

#ifndef LOCKSTEP_KERNELS_PROTOCOL_PLATFORM_H_
#define LOCKSTEP_KERNELS_PROTOCOL_PLATFORM_H_

#if defined(__CUDACC__)
#define LS_HD __host__ __device__
#define LS_INLINE __forceinline__
#else
#define LS_HD
#define LS_INLINE inline
#endif

#endif  // LOCKSTEP_KERNELS_PROTOCOL_PLATFORM_H_
