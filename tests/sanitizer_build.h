// Whether this test binary was built with AddressSanitizer or
// ThreadSanitizer. GCC names a sanitizer build with a macro, clang with
// __has_feature; a test that measures memory or reads the C library's own
// allocator asks here.

#ifndef LOCKSTEP_TESTS_SANITIZER_BUILD_H_
#define LOCKSTEP_TESTS_SANITIZER_BUILD_H_

namespace lockstep::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
#else
inline constexpr bool kSanitizerBuild = false;
#endif

}  // namespace lockstep::testing

#endif  // LOCKSTEP_TESTS_SANITIZER_BUILD_H_
