// Stackful coroutines for simulated ranks (Boost.Context), with the
// sanitizer annotations that let ASan and TSan follow stack switches.

#ifndef LOCKSTEP_SIM_RUNTIME_FIBER_H_
#define LOCKSTEP_SIM_RUNTIME_FIBER_H_

#include <cstddef>
#include <functional>
#include <memory>

namespace lockstep {

// A coroutine that runs `body` on its own stack. Resume() runs it until it
// calls Suspend() (from inside body) or returns. Not thread-safe; a fiber is
// resumed by one thread at a time. Its owner must let it finish before
// destroying it (Scheduler::Shutdown does): destroying a suspended fiber makes
// Boost.Context unwind its stack with an exception, which sanitizers cannot
// follow.
class Fiber {
 public:
  // Rank programs are shallow (the deepest path, a failure report, fits in
  // 16 KiB without sanitizers); 64 KiB leaves room, and sanitizers, whose
  // frames are several times larger, get 512 KiB. At 4096 ranks the stacks
  // are the simulator's largest allocation.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static constexpr size_t kDefaultStackBytes = 512 * 1024;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  static constexpr size_t kDefaultStackBytes = 512 * 1024;
#else
  static constexpr size_t kDefaultStackBytes = 64 * 1024;
#endif
#else
  static constexpr size_t kDefaultStackBytes = 64 * 1024;
#endif

  explicit Fiber(std::function<void()> body, size_t stack_bytes = kDefaultStackBytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Runs the fiber until it suspends or finishes. Must not be called from
  // inside a fiber. An exception the body lets escape (std::bad_alloc)
  // finishes the fiber and is rethrown here.
  void Resume();
  // Returns control to whoever resumed the current fiber. Only from inside.
  static void Suspend();

  bool finished() const;

  struct Impl;  // defined in fiber.cc

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_RUNTIME_FIBER_H_
