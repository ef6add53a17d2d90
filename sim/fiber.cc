#include "sim/fiber.h"

#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>
#include <cassert>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define LOCKSTEP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOCKSTEP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LOCKSTEP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LOCKSTEP_TSAN 1
#endif
#endif

#if defined(LOCKSTEP_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(LOCKSTEP_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace ctx = boost::context;

namespace lockstep {

struct Fiber::Impl {
  std::function<void()> body;
  ctx::fiber self;               // the fiber while suspended (empty while it runs)
  ctx::fiber* caller = nullptr;  // the resumer's continuation while it runs
  bool finished = false;
  size_t stack_bytes = 0;
  void* stack_bottom = nullptr;
#if defined(LOCKSTEP_ASAN)
  const void* caller_stack_bottom = nullptr;
  size_t caller_stack_size = 0;
  void* fake_stack = nullptr;
#endif
#if defined(LOCKSTEP_TSAN)
  void* tsan_fiber = nullptr;
  void* tsan_caller = nullptr;
#endif
};

namespace {
thread_local Fiber::Impl* current = nullptr;

// A stack allocator that remembers where the stack is (for ASan).
struct RecordingStack {
  ctx::fixedsize_stack inner;
  void** bottom;
  ctx::stack_context allocate() {
    ctx::stack_context sc = inner.allocate();
    *bottom = static_cast<char*>(sc.sp) - sc.size;
    return sc;
  }
  void deallocate(ctx::stack_context& sc) noexcept { inner.deallocate(sc); }
};
}  // namespace

Fiber::Fiber(std::function<void()> body, size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  impl_->body = std::move(body);
  impl_->stack_bytes = stack_bytes;
  Impl* impl = impl_.get();
#if defined(LOCKSTEP_TSAN)
  impl->tsan_fiber = __tsan_create_fiber(0);
#endif
  impl->self = ctx::fiber(
      std::allocator_arg, RecordingStack{ctx::fixedsize_stack(stack_bytes), &impl->stack_bottom},
      [impl](ctx::fiber&& caller) {
#if defined(LOCKSTEP_ASAN)
        __sanitizer_finish_switch_fiber(nullptr, &impl->caller_stack_bottom,
                                        &impl->caller_stack_size);
#endif
        impl->caller = &caller;
        impl->body();
        impl->finished = true;
#if defined(LOCKSTEP_ASAN)
        __sanitizer_start_switch_fiber(nullptr, impl->caller_stack_bottom, impl->caller_stack_size);
#endif
#if defined(LOCKSTEP_TSAN)
        __tsan_switch_to_fiber(impl->tsan_caller, 0);
#endif
        return std::move(caller);
      });
}

Fiber::~Fiber() {
#if defined(LOCKSTEP_TSAN)
  if (impl_ && impl_->tsan_fiber != nullptr) __tsan_destroy_fiber(impl_->tsan_fiber);
#endif
}

void Fiber::Resume() {
  assert(current == nullptr && "Fiber::Resume from inside a fiber");
  assert(!impl_->finished);
  Impl* impl = impl_.get();
  current = impl;
#if defined(LOCKSTEP_ASAN)
  __sanitizer_start_switch_fiber(&impl->fake_stack, impl->stack_bottom, impl->stack_bytes);
#endif
#if defined(LOCKSTEP_TSAN)
  impl->tsan_caller = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(impl->tsan_fiber, 0);
#endif
  ctx::fiber returned = std::move(impl->self).resume();
#if defined(LOCKSTEP_ASAN)
  __sanitizer_finish_switch_fiber(impl->fake_stack, nullptr, nullptr);
#endif
  current = nullptr;
  if (!impl->finished) impl->self = std::move(returned);
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
  ctx::fiber& caller = *impl->caller;
  caller = std::move(caller).resume();
  impl->caller = &caller;
#if defined(LOCKSTEP_ASAN)
  __sanitizer_finish_switch_fiber(fake, &impl->caller_stack_bottom, &impl->caller_stack_size);
#endif
}

bool Fiber::finished() const { return impl_->finished; }

}  // namespace lockstep
