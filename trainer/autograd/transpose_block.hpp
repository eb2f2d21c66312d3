// One block of a transpose, dst[c * ldd + r] (+)= src[r * ld + c] for
// r < rows, c < cols: the inner loop of transpose, add_transposed and the
// GEMM's packing of an [N, K] operand. Floats go 4 x 4 through 16-byte
// vectors (GCC and Clang vector extensions: SSE, NEON or WebAssembly SIMD,
// scalar code elsewhere), twice the scalar loop's speed on the [4096, 128 to
// 384] gradients of a training step; the values are copied or added one by
// one either way, so the result is the same.
#pragma once

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace mt::autograd {

template <bool Add, class T>
inline void transpose_block(const T* src, size_t ld, T* dst, size_t ldd, int rows, int cols) {
  int c = 0;
  if constexpr (std::is_same_v<T, float>) {
    typedef float v4 __attribute__((vector_size(16)));
    for (; c + 4 <= cols; c += 4) {
      int r = 0;
      for (; r + 4 <= rows; r += 4) {
        v4 x0, x1, x2, x3;
        std::memcpy(&x0, src + size_t(r) * ld + c, sizeof(v4));
        std::memcpy(&x1, src + size_t(r + 1) * ld + c, sizeof(v4));
        std::memcpy(&x2, src + size_t(r + 2) * ld + c, sizeof(v4));
        std::memcpy(&x3, src + size_t(r + 3) * ld + c, sizeof(v4));
        const v4 t0 = __builtin_shufflevector(x0, x1, 0, 4, 1, 5);  // x0[0] x1[0] x0[1] x1[1]
        const v4 t1 = __builtin_shufflevector(x0, x1, 2, 6, 3, 7);
        const v4 t2 = __builtin_shufflevector(x2, x3, 0, 4, 1, 5);
        const v4 t3 = __builtin_shufflevector(x2, x3, 2, 6, 3, 7);
        v4 y[4] = {__builtin_shufflevector(t0, t2, 0, 1, 4, 5), __builtin_shufflevector(t0, t2, 2, 3, 6, 7),
                   __builtin_shufflevector(t1, t3, 0, 1, 4, 5), __builtin_shufflevector(t1, t3, 2, 3, 6, 7)};
        for (int j = 0; j < 4; ++j) {
          float* d = dst + size_t(c + j) * ldd + r;
          if constexpr (Add) {
            v4 old;
            std::memcpy(&old, d, sizeof(v4));
            y[j] = old + y[j];
          }
          std::memcpy(d, &y[j], sizeof(v4));
        }
      }
      for (; r < rows; ++r)
        for (int j = 0; j < 4; ++j) {
          T& d = dst[size_t(c + j) * ldd + r];
          d = Add ? d + src[size_t(r) * ld + c + j] : src[size_t(r) * ld + c + j];
        }
    }
  }
  for (; c < cols; ++c) {
    T* d = dst + size_t(c) * ldd;
    const T* s = src + c;
    for (int r = 0; r < rows; ++r) d[r] = Add ? d[r] + s[size_t(r) * ld] : s[size_t(r) * ld];
  }
}

}  // namespace mt::autograd
