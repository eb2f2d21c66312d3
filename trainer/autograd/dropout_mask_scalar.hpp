// dropout_mask_f32 (dropout_mask.hpp) in plain C++ for float and double:
// the definition every ISA's implementation matches bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "support/splitmix64.hpp"

namespace mt::autograd {

// Element i of the stream with this key is kept (not dropped) at this
// threshold (ceil(p 2^53): dropout.cpp).
inline bool dropout_kept(uint64_t key, uint64_t i, uint64_t threshold) {
  return (detail::splitmix64(key + i) >> 11) >= threshold;
}

template <class T>
void dropout_mask_scalar(const T* x, T* y, T* mask, int64_t begin, int64_t end, uint64_t key, uint64_t threshold,
                         T keep_scale) {
  // The mask is keep_scale's bits ANDed with all ones or zeros: with a
  // choice between the two values (or a product by 0 or 1), GCC branches,
  // and the branch mispredicts on p of the elements.
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  Bits keep;
  std::memcpy(&keep, &keep_scale, sizeof(T));
  for (int64_t i = begin; i < end; ++i) {
    const Bits bits = keep & (Bits(0) - Bits(dropout_kept(key, uint64_t(i), threshold)));
    T mi;
    std::memcpy(&mi, &bits, sizeof(T));
    mask[i] = mi;
    y[i] = x[i] * mi;
  }
}

}  // namespace mt::autograd
