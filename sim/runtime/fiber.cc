#include "sim/runtime/fiber.h"

#include <cassert>
#include <cstdint>
#include <exception>
#include <utility>

// Two backends with one interface:
//  - Boost.Context's fcontext (tens of nanoseconds a switch), with every
//    switch announced to ASan when it is on;
//  - ThreadSanitizer builds (LOCKSTEP_FIBER_UCONTEXT, set by
//    sim/CMakeLists.txt): ucontext, with every switch announced to TSan
//    (slower: each switch is a system call).
#if defined(LOCKSTEP_FIBER_UCONTEXT)
#include <ucontext.h>

#include <memory>
#if defined(__SANITIZE_ADDRESS__)
#define LOCKSTEP_ASAN 1
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define LOCKSTEP_TSAN 1
#include <sanitizer/tsan_interface.h>
#endif
#else
#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <cstdlib>
#include <new>
#endif

namespace lockstep {

#if defined(LOCKSTEP_FIBER_UCONTEXT)

struct Fiber::Impl {
  std::function<void()> body;
  std::unique_ptr<char[]> stack;
  size_t stack_bytes = 0;
  ucontext_t self{};
  ucontext_t caller{};
  bool finished = false;
  std::exception_ptr error;  // what the body threw, rethrown by Resume()
#if defined(LOCKSTEP_ASAN)
  const void* caller_stack_bottom = nullptr;
  size_t caller_stack_size = 0;
#endif
#if defined(LOCKSTEP_TSAN)
  void* tsan_fiber = nullptr;
  void* tsan_caller = nullptr;
#endif
};

namespace {
thread_local Fiber::Impl* current = nullptr;

void Trampoline(unsigned high, unsigned low) {
  auto* impl = reinterpret_cast<Fiber::Impl*>((static_cast<uintptr_t>(high) << 32) |
                                              static_cast<uintptr_t>(low));
#if defined(LOCKSTEP_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &impl->caller_stack_bottom, &impl->caller_stack_size);
#endif
  try {
    impl->body();
  } catch (...) {
    impl->error = std::current_exception();
  }
  impl->finished = true;
#if defined(LOCKSTEP_ASAN)
  __sanitizer_start_switch_fiber(nullptr, impl->caller_stack_bottom, impl->caller_stack_size);
#endif
#if defined(LOCKSTEP_TSAN)
  __tsan_switch_to_fiber(impl->tsan_caller, 0);
#endif
  setcontext(&impl->caller);
}
}  // namespace

Fiber::Fiber(std::function<void()> body, size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  impl->body = std::move(body);
  impl->stack_bytes = stack_bytes;
  impl->stack = std::make_unique<char[]>(stack_bytes);
  getcontext(&impl->self);
  impl->self.uc_stack.ss_sp = impl->stack.get();
  impl->self.uc_stack.ss_size = stack_bytes;
  impl->self.uc_link = nullptr;
  const auto address = reinterpret_cast<uintptr_t>(impl);
  makecontext(&impl->self, reinterpret_cast<void (*)()>(&Trampoline), 2,
              static_cast<unsigned>(address >> 32), static_cast<unsigned>(address & 0xffffffffu));
#if defined(LOCKSTEP_TSAN)
  impl->tsan_fiber = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
#if defined(LOCKSTEP_TSAN)
  __tsan_destroy_fiber(impl_->tsan_fiber);
#endif
}

void Fiber::Resume() {
  assert(current == nullptr && "Fiber::Resume from inside a fiber");
  Impl* impl = impl_.get();
  assert(!impl->finished);
  current = impl;
#if defined(LOCKSTEP_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, impl->stack.get(), impl->stack_bytes);
#endif
#if defined(LOCKSTEP_TSAN)
  impl->tsan_caller = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(impl->tsan_fiber, 0);
#endif
  swapcontext(&impl->caller, &impl->self);
#if defined(LOCKSTEP_ASAN)
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  current = nullptr;
  if (impl->error) std::rethrow_exception(std::exchange(impl->error, nullptr));
}

void Fiber::Suspend() {
  Impl* impl = current;
  assert(impl != nullptr && "Fiber::Suspend outside a fiber");
#if defined(LOCKSTEP_ASAN)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, impl->caller_stack_bottom, impl->caller_stack_size);
#endif
#if defined(LOCKSTEP_TSAN)
  __tsan_switch_to_fiber(impl->tsan_caller, 0);
#endif
  swapcontext(&impl->self, &impl->caller);
#if defined(LOCKSTEP_ASAN)
  __sanitizer_finish_switch_fiber(fake, &impl->caller_stack_bottom, &impl->caller_stack_size);
#endif
}

#else  // Boost.Context fcontext

#if defined(__SANITIZE_ADDRESS__)
#define LOCKSTEP_ASAN_FCONTEXT 1
#include <sanitizer/common_interface_defs.h>
#endif

namespace ctx = boost::context;

struct Fiber::Impl {
  std::function<void()> body;
  ctx::fiber self;               // the fiber while suspended (empty while it runs)
  ctx::fiber* caller = nullptr;  // the resumer's continuation while it runs
  bool finished = false;
  std::exception_ptr error;  // what the body threw, rethrown by Resume()
#if defined(LOCKSTEP_ASAN_FCONTEXT)
  void* stack_bottom = nullptr;
  size_t stack_bytes = 0;
  const void* caller_stack_bottom = nullptr;
  size_t caller_stack_size = 0;
#endif
};

namespace {
thread_local Fiber::Impl* current = nullptr;

constexpr size_t kPageBytes = 4096;

// A stack allocator whose stacks end on a page boundary, and that remembers
// where the stack is (ASan needs it). A stack grows down from its end, where
// Boost writes the fiber's record when the fiber is made: a fiber whose
// frames fit in the rest of that page touches no other page of its stack. A
// stack from malloc ends anywhere in a page, and the same frames then span
// two or three, each a page fault the first time a rank reaches it
// (docs/PERFORMANCE.md, twenty-third session).
struct RecordingStack {
  size_t bytes;  // a multiple of kPageBytes
  Fiber::Impl* impl;
  ctx::stack_context allocate() {
    void* base = std::aligned_alloc(kPageBytes, bytes);
    if (base == nullptr) throw std::bad_alloc();
    ctx::stack_context sc;
    sc.size = bytes;
    sc.sp = static_cast<char*>(base) + bytes;
#if defined(LOCKSTEP_ASAN_FCONTEXT)
    impl->stack_bottom = base;
    impl->stack_bytes = bytes;
#endif
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept {
    std::free(static_cast<char*>(sc.sp) - sc.size);
  }
};
}  // namespace

Fiber::Fiber(std::function<void()> body, size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  Impl* impl = impl_.get();
  impl->body = std::move(body);
  impl->self = ctx::fiber(
      std::allocator_arg,
      RecordingStack{(stack_bytes + kPageBytes - 1) / kPageBytes * kPageBytes, impl},
      [impl](ctx::fiber&& caller) {
#if defined(LOCKSTEP_ASAN_FCONTEXT)
        __sanitizer_finish_switch_fiber(nullptr, &impl->caller_stack_bottom,
                                        &impl->caller_stack_size);
#endif
        impl->caller = &caller;
        // An exception must not leave a fiber's entry function (that
        // terminates the process, issue 11): it is carried to the resumer,
        // and from there to main's internal-error report. Boost's own unwind
        // of a destroyed fiber passes through.
        try {
          impl->body();
        } catch (const ctx::detail::forced_unwind&) {
          throw;
        } catch (...) {
          impl->error = std::current_exception();
        }
        impl->finished = true;
#if defined(LOCKSTEP_ASAN_FCONTEXT)
        __sanitizer_start_switch_fiber(nullptr, impl->caller_stack_bottom, impl->caller_stack_size);
#endif
        return std::move(caller);
      });
}

// Schedulers finish every fiber before destroying it (Scheduler::Shutdown), so
// Boost.Context never has to unwind a suspended stack with an exception, which
// ASan could not follow.
Fiber::~Fiber() = default;

void Fiber::Resume() {
  assert(current == nullptr && "Fiber::Resume from inside a fiber");
  Impl* impl = impl_.get();
  assert(!impl->finished);
  current = impl;
#if defined(LOCKSTEP_ASAN_FCONTEXT)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, impl->stack_bottom, impl->stack_bytes);
#endif
  ctx::fiber returned = std::move(impl->self).resume();
#if defined(LOCKSTEP_ASAN_FCONTEXT)
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  current = nullptr;
  if (!impl->finished) impl->self = std::move(returned);
  if (impl->error) std::rethrow_exception(std::exchange(impl->error, nullptr));
}

void Fiber::Suspend() {
  Impl* impl = current;
  assert(impl != nullptr && "Fiber::Suspend outside a fiber");
#if defined(LOCKSTEP_ASAN_FCONTEXT)
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, impl->caller_stack_bottom, impl->caller_stack_size);
#endif
  ctx::fiber& caller = *impl->caller;
  caller = std::move(caller).resume();
  impl->caller = &caller;
#if defined(LOCKSTEP_ASAN_FCONTEXT)
  __sanitizer_finish_switch_fiber(fake, &impl->caller_stack_bottom, &impl->caller_stack_size);
#endif
}

#endif

bool Fiber::finished() const { return impl_->finished; }

}  // namespace lockstep
