// A vector with room for one element inline, for the run lists, chunks and
// sums of the simulator's data, which hold one element almost always.
//
// absl::InlinedVector<T, 1> served here before. Its elements (a SimValue holds
// a shared_ptr to numeric data, null in symbolic mode) are not trivially
// copyable, so every erase, move and destruction took absl's general
// element-by-element path: on the NCCL row of bench/sim_bench, erasing and
// destroying one-run lists cost ~130 of a rank-call's ~2 500 instructions
// (docs/PERFORMANCE.md, fifteenth session). This one relocates elements
// with memcpy instead of moving and destroying them, which is what the
// element types allow (IsTriviallyRelocatable below), and keeps its storage
// when emptied.

#ifndef LOCKSTEP_SIM_MEMORY_SMALL_VECTOR_H_
#define LOCKSTEP_SIM_MEMORY_SMALL_VECTOR_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace lockstep {

// Whether a T may be moved to other storage by copying its bytes, the old
// bytes then never destroyed (Folly's IsRelocatable, P1144's trivially
// relocatable). True of trivially copyable types; a type made of such
// members and std::shared_ptr (two pointers, neither of which points into
// the object) says so by specialising this.
template <class T>
struct IsTriviallyRelocatable : std::is_trivially_copyable<T> {};

template <class T>
class SmallVector {
  static_assert(IsTriviallyRelocatable<T>::value,
                "SmallVector relocates elements with memcpy: specialise "
                "IsTriviallyRelocatable for T once that is true of it");

 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVector() noexcept {}  // (user-provided: the union stays uninitialised)
  SmallVector(const SmallVector& other) { Append(other); }
  SmallVector(SmallVector&& other) noexcept { Steal(other); }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      clear();
      Append(other);
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      FreeHeap();
      Steal(other);
    }
    return *this;
  }
  ~SmallVector() {
    DestroyRange(0, size_);
    FreeHeap();
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T* data() { return capacity_ > 1 ? heap_ : Inline(); }
  const T* data() const { return capacity_ > 1 ? heap_ : Inline(); }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size_; }
  T& operator[](size_t i) {
    assert(i < size_);
    return data()[i];
  }
  const T& operator[](size_t i) const {
    assert(i < size_);
    return data()[i];
  }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data()[i];
  }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) Grow(n);
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) [[unlikely]] {
      return EmplaceBackGrowing(std::forward<Args>(args)...);
    }
    return *::new (data() + size_++) T(std::forward<Args>(args)...);
  }
  void push_back(const T& value) { emplace_back(value); }
  void push_back(T&& value) { emplace_back(std::move(value)); }
  void pop_back() {
    assert(size_ > 0);
    data()[--size_].~T();
  }
  // Destroys the elements and keeps the storage.
  void clear() {
    DestroyRange(0, size_);
    size_ = 0;
  }
  void resize(size_t n) {
    if (n < size_) {
      DestroyRange(n, size_);
      size_ = static_cast<uint32_t>(n);
      return;
    }
    reserve(n);
    for (T* p = data() + size_; size_ < n; ++p, ++size_) ::new (p) T();
  }
  // Removes [first, last); returns the position after them.
  iterator erase(const_iterator first, const_iterator last) {
    const size_t at = Index(first);
    const size_t n = Index(last) - at;
    if (n == 0) return data() + at;
    DestroyRange(at, at + n);
    T* base = data();
    std::memmove(static_cast<void*>(base + at), static_cast<const void*>(base + at + n),
                 (size_ - at - n) * sizeof(T));
    size_ -= static_cast<uint32_t>(n);
    return base + at;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  // Inserts `n` copies of `value` before `pos`; returns the first of them.
  iterator insert(const_iterator pos, size_t n, const T& value) {
    const size_t at = Index(pos);
    if (n == 0) return data() + at;
    const T copy(value);  // `value` may be an element that moves
    if (size_ + n > capacity_) Grow(std::max<size_t>(size_ + n, 2 * size_t{capacity_}));
    T* base = data();
    std::memmove(static_cast<void*>(base + at + n), static_cast<const void*>(base + at),
                 (size_ - at) * sizeof(T));
    for (size_t k = 0; k < n; ++k) ::new (base + at + k) T(copy);
    size_ += static_cast<uint32_t>(n);
    return base + at;
  }
  iterator insert(const_iterator pos, const T& value) { return insert(pos, 1, value); }
  void assign(size_t n, const T& value) {
    const T copy(value);  // `value` may be an element
    clear();
    insert(begin(), n, copy);
  }

 private:
  T* Inline() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* Inline() const { return std::launder(reinterpret_cast<const T*>(inline_)); }
  size_t Index(const_iterator it) const { return static_cast<size_t>(it - data()); }
  // emplace_back into a full vector, out of line so that the usual append
  // inlines where it is called (absl's EmplaceBackSlow, likewise).
  template <class... Args>
  [[gnu::noinline]] T& EmplaceBackGrowing(Args&&... args) {
    // The arguments may refer to an element: build the new one first.
    T made(std::forward<Args>(args)...);
    Grow(2 * size_t{capacity_});
    return *::new (data() + size_++) T(std::move(made));
  }
  void DestroyRange(size_t from, size_t to) {
    if constexpr (!std::is_trivially_destructible_v<T>) {
      T* base = data();
      for (size_t i = from; i < to; ++i) base[i].~T();
    }
  }
  void FreeHeap() {
    if (capacity_ > 1) {
      std::allocator<T>().deallocate(heap_, capacity_);
      capacity_ = 1;
    }
  }
  // Relocates the elements into storage for `n` (n > capacity_).
  void Grow(size_t n) {
    assert(n > capacity_ && n <= UINT32_MAX);
    T* fresh = std::allocator<T>().allocate(n);
    std::memcpy(static_cast<void*>(fresh), static_cast<const void*>(data()), size_ * sizeof(T));
    FreeHeap();
    heap_ = fresh;
    capacity_ = static_cast<uint32_t>(n);
  }
  void Append(const SmallVector& other) {
    reserve(size_ + other.size_);
    T* base = data();
    for (const T& v : other) ::new (base + size_++) T(v);
  }
  // Takes `other`'s elements (this one empty, its storage inline), leaving
  // `other` empty with inline storage.
  void Steal(SmallVector& other) {
    if (other.capacity_ > 1) {
      heap_ = other.heap_;
      capacity_ = std::exchange(other.capacity_, 1);
    } else if (other.size_ != 0) {
      std::memcpy(static_cast<void*>(inline_), static_cast<const void*>(other.inline_), sizeof(T));
    }
    size_ = std::exchange(other.size_, 0);
  }

  uint32_t size_ = 0;
  uint32_t capacity_ = 1;  // 1: the element lives in inline_; more: in heap_
  union {
    alignas(T) unsigned char inline_[sizeof(T)];
    T* heap_;
  };
};

}  // namespace lockstep

#endif  // LOCKSTEP_SIM_MEMORY_SMALL_VECTOR_H_
