// Per-row u8 quantization on NEON (mt/kernels.h, QuantizeRowsU8): the float
// operations of platforms/ref/quantize_rows.cpp one for one, so q, scales
// and zeros are bit-identical to the reference. NEON's fmin/fmax would carry
// a NaN on, so every min, max and clamp is the reference's comparison and
// select; fcvtns rounds half to even as nearbyint does. -ffp-contract=off.
#include <cstring>

#include "arm/int8_arm.h"

namespace mt::arm {

namespace {

// 8 floats -> 8 bytes.
inline uint8x8_t quantize8(float32x4_t a0, float32x4_t a1, float32x4_t inv_scale, int32x4_t zero) {
  const float32x4_t lo = vdupq_n_f32(-512.0f), hi = vdupq_n_f32(512.0f);
  auto one = [&](float32x4_t a) {
    float32x4_t x = vmulq_f32(a, inv_scale);
    x = vbslq_f32(vcgtq_f32(x, lo), x, lo);  // x > -512 ? x : -512 (NaN -> -512)
    x = vbslq_f32(vcltq_f32(x, hi), x, hi);
    const int32x4_t q = vaddq_s32(vcvtnq_s32_f32(x), zero);
    return vqmovun_s32(q);  // clamps to [0, 65535]; the narrowing below to [0, 255]
  };
  return vqmovn_u16(vcombine_u16(one(a0), one(a1)));
}

}  // namespace

void quantize_rows_u8_neon(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                           int32_t* zeros, float static_scale, int32_t static_zero) {
  const int Kp = padded_k_i8(K);
  const int tail = K % 8, body = K - tail;
  for (int m = 0; m < M; ++m) {
    const float* a = A + size_t(m) * lda;
    uint8_t* q = Aq + size_t(m) * ldq;
    // The tail through zero-padded copies: 0 is inside every range.
    float padded[8] = {};
    std::memcpy(padded, a + body, size_t(tail) * sizeof(float));
    float scale = static_scale;
    int32_t zero = static_zero;
    if (static_scale <= 0.0f) {
      // x < lo ? x : lo, as the reference: a NaN is skipped, and -0 never
      // replaces +0, so the lanes' order does not change the result.
      float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
      auto take = [&](float32x4_t x) {
        lo = vbslq_f32(vcltq_f32(x, lo), x, lo);
        hi = vbslq_f32(vcgtq_f32(x, hi), x, hi);
      };
      for (int k = 0; k < body; k += 4) take(vld1q_f32(a + k));
      take(vld1q_f32(padded));
      take(vld1q_f32(padded + 4));
      float l[4], h[4];
      vst1q_f32(l, lo);
      vst1q_f32(h, hi);
      float min = 0.0f, max = 0.0f;
      for (int i = 0; i < 4; ++i) {
        min = l[i] < min ? l[i] : min;
        max = h[i] > max ? h[i] : max;
      }
      quantize_range_u8(min, max, &scale, &zero);
    }
    scales[m] = scale;
    zeros[m] = zero;
    const float32x4_t inv_scale = vdupq_n_f32(1.0f / scale);
    const int32x4_t vzero = vdupq_n_s32(zero);
    for (int k = 0; k < body; k += 8)
      vst1_u8(q + k, quantize8(vld1q_f32(a + k), vld1q_f32(a + k + 4), inv_scale, vzero));
    if (tail) {
      uint8_t bytes[8];
      vst1_u8(bytes, quantize8(vld1q_f32(padded), vld1q_f32(padded + 4), inv_scale, vzero));
      std::memcpy(q + body, bytes, size_t(tail));
    }
    for (int k = K; k < Kp; ++k) q[k] = 0;
  }
}

}  // namespace mt::arm
