// Carves typed arrays out of a caller's byte span, so encoding runs without
// heap allocation. ScratchPlan computes the size the same carving needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

namespace mt::detail {

// Bytes needed for `count` objects of T at any alignment of the span.
template <class T>
constexpr size_t scratch_bytes(size_t count) {
  return count * sizeof(T) + alignof(T) - 1;
}

class Scratch {
 public:
  explicit Scratch(std::span<std::byte> memory) : memory_(memory) {}

  // `count` objects of T, suitably aligned (not constructed: use trivial
  // types only), or nullptr when the span is exhausted.
  template <class T>
  T* take(size_t count) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
    const auto base = reinterpret_cast<uintptr_t>(memory_.data());
    const size_t start = (base + used_ + alignof(T) - 1) / alignof(T) * alignof(T) - base;
    if (start > memory_.size() || count > (memory_.size() - start) / sizeof(T)) return nullptr;
    used_ = start + count * sizeof(T);
    return reinterpret_cast<T*>(memory_.data() + start);
  }

 private:
  std::span<std::byte> memory_;
  size_t used_ = 0;
};

}  // namespace mt::detail
