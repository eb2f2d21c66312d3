// Per-row u8 quantization on WebAssembly SIMD128 (mt/kernels.h,
// QuantizeRowsU8): the float operations of platforms/ref/quantize_rows.cpp
// one for one (comparison and select for min, max and the clamps, so a NaN
// is skipped as there; f32x4.nearest rounds half to even as nearbyint), so
// q, scales and zeros are bit-identical to the reference.
#include <wasm_simd128.h>

#include <cstring>

#include "wasm/int8_wasm.h"

namespace mt::wasm {

namespace {

// 8 floats -> 8 bytes (the low half of the result).
inline v128_t quantize8(v128_t a0, v128_t a1, v128_t inv_scale, v128_t zero) {
  const v128_t lo = wasm_f32x4_splat(-512.0f), hi = wasm_f32x4_splat(512.0f);
  auto one = [&](v128_t a) {
    v128_t x = wasm_f32x4_mul(a, inv_scale);
    x = wasm_v128_bitselect(x, lo, wasm_f32x4_gt(x, lo));  // x > -512 ? x : -512 (NaN -> -512)
    x = wasm_v128_bitselect(x, hi, wasm_f32x4_lt(x, hi));
    return wasm_i32x4_add(wasm_i32x4_trunc_sat_f32x4(wasm_f32x4_nearest(x)), zero);
  };
  const v128_t q16 = wasm_u16x8_narrow_i32x4(one(a0), one(a1));  // saturates to [0, 65535]
  return wasm_u8x16_narrow_i16x8(q16, q16);                      // and to [0, 255]
}

}  // namespace

void quantize_rows_u8_simd128(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                              int32_t* zeros, float static_scale, int32_t static_zero) {
  const int Kp = padded_k_i8(K);
  const int tail = K % 8, body = K - tail;
  for (int m = 0; m < M; ++m) {
    const float* a = A + size_t(m) * lda;
    uint8_t* q = Aq + size_t(m) * ldq;
    // The tail through zero-padded copies: 0 is inside every range.
    alignas(16) float padded[8] = {};
    std::memcpy(padded, a + body, size_t(tail) * sizeof(float));
    float scale = static_scale;
    int32_t zero = static_zero;
    if (static_scale <= 0.0f) {
      // x < lo ? x : lo, as the reference: a NaN is skipped, and -0 never
      // replaces +0, so the lanes' order does not change the result.
      v128_t lo = wasm_f32x4_splat(0.0f), hi = wasm_f32x4_splat(0.0f);
      auto take = [&](v128_t x) {
        lo = wasm_v128_bitselect(x, lo, wasm_f32x4_lt(x, lo));
        hi = wasm_v128_bitselect(x, hi, wasm_f32x4_gt(x, hi));
      };
      for (int k = 0; k < body; k += 4) take(wasm_v128_load(a + k));
      take(wasm_v128_load(padded));
      take(wasm_v128_load(padded + 4));
      alignas(16) float l[4], h[4];
      wasm_v128_store(l, lo);
      wasm_v128_store(h, hi);
      float min = 0.0f, max = 0.0f;
      for (int i = 0; i < 4; ++i) {
        min = l[i] < min ? l[i] : min;
        max = h[i] > max ? h[i] : max;
      }
      quantize_range_u8(min, max, &scale, &zero);
    }
    scales[m] = scale;
    zeros[m] = zero;
    const v128_t inv_scale = wasm_f32x4_splat(1.0f / scale);
    const v128_t vzero = wasm_i32x4_splat(zero);
    for (int k = 0; k < body; k += 8) {
      const v128_t bytes = quantize8(wasm_v128_load(a + k), wasm_v128_load(a + k + 4), inv_scale, vzero);
      const int64_t low = wasm_i64x2_extract_lane(bytes, 0);
      std::memcpy(q + k, &low, 8);
    }
    if (tail) {
      const v128_t bytes = quantize8(wasm_v128_load(padded), wasm_v128_load(padded + 4), inv_scale, vzero);
      const int64_t low = wasm_i64x2_extract_lane(bytes, 0);
      std::memcpy(q + body, &low, size_t(tail));
    }
    for (int k = K; k < Kp; ++k) q[k] = 0;
  }
}

}  // namespace mt::wasm
