// Memory planning: offsets into one block, computed before it exists (so the
// size can be queried and the block supplied by the caller), bound after.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mt::detail {

inline constexpr size_t kArenaAlignment = 64;

class ArenaPlanner {
 public:
  // Reserves `count` objects of T, 64-byte aligned; returns their offset.
  template <class T>
  size_t reserve(size_t count) {
    const size_t offset = (size_ + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    size_ = offset + count * sizeof(T);
    return offset;
  }
  size_t size() const { return (size_ + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

 private:
  size_t size_ = 0;
};

template <class T>
T* at(std::byte* base, size_t offset) {
  return reinterpret_cast<T*>(base + offset);
}

}  // namespace mt::detail
