// Memory planning: offsets into one block, computed before it exists (so the
// size can be queried and the block supplied by the caller), bound after.
#pragma once

#include <cstddef>
#include <cstdint>

#include "support/alignment.hpp"

namespace mt::detail {

class ArenaPlanner {
 public:
  // Reserves `count` objects of T, 64-byte aligned; returns their offset.
  // Sizes that do not fit in size_t (options or a damaged model asking for
  // absurd amounts) make size() report SIZE_MAX instead of wrapping around.
  template <class T>
  size_t reserve(size_t count) {
    const size_t offset = aligned(size_);
    size_t bytes = 0;
    if (__builtin_mul_overflow(count, sizeof(T), &bytes) || __builtin_add_overflow(offset, bytes, &size_) ||
        size_ > SIZE_MAX - kAlignment) {
      overflowed_ = true;
      size_ = 0;
    }
    return offset;
  }
  // rows * stride, saturating: an impossible product then overflows reserve().
  static size_t product(size_t rows, size_t stride) {
    size_t n = 0;
    return __builtin_mul_overflow(rows, stride, &n) ? SIZE_MAX : n;
  }
  size_t size() const { return overflowed_ ? SIZE_MAX : aligned(size_); }

 private:
  static size_t aligned(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
  size_t size_ = 0;
  bool overflowed_ = false;
};

template <class T>
T* at(std::byte* base, size_t offset) {
  return reinterpret_cast<T*>(base + offset);
}

}  // namespace mt::detail
