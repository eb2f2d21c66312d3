// Reference per-row quantization of fp32 activations to u8 with a zero point
// (mt/kernels.h, QuantizeRowsU8).
//
// The SIMD versions repeat these float operations one for one (multiply by
// the row's 1 / scale, clamp, round half to even), so q is bit-identical.
#include <cmath>

#include "ref/kernels_ref.h"

namespace mt {

namespace {

// Clamping to +-512 before rounding changes no result (zero is in [0, 255])
// but keeps the int conversion in range, and sends NaN to -512 as maxps does.
uint8_t quantize_u8(float a, float inv_scale, int32_t zero) {
  float x = a * inv_scale;
  x = x > -512.0f ? x : -512.0f;
  x = x < 512.0f ? x : 512.0f;
  const int32_t q = int32_t(std::nearbyint(x)) + zero;
  return uint8_t(q < 0 ? 0 : q > 255 ? 255 : q);
}

}  // namespace

void quantize_range_u8(float lo, float hi, float* scale, int32_t* zero) {
  float s = (hi - lo) / 255.0f;
  // hi == lo gives 0; a range of a few denormals would too (or NaN from inf - inf).
  if (!(s > 0.0f)) s = 1.0f;
  float z = std::nearbyint(-lo / s);
  z = z > 0.0f ? z : 0.0f;
  z = z < 255.0f ? z : 255.0f;
  *scale = s;
  *zero = int32_t(z);
}

void quantize_rows_u8_ref(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                          int32_t* zeros, float static_scale, int32_t static_zero) {
  const int Kp = padded_k_i8(K);
  for (int m = 0; m < M; ++m) {
    const float* a = A + size_t(m) * lda;
    uint8_t* q = Aq + size_t(m) * ldq;
    float scale = static_scale;
    int32_t zero = static_zero;
    if (static_scale <= 0.0f) {
      // Written as minps/maxps behave: a NaN input is skipped.
      float lo = 0.0f, hi = 0.0f;
      for (int k = 0; k < K; ++k) {
        lo = a[k] < lo ? a[k] : lo;
        hi = a[k] > hi ? a[k] : hi;
      }
      quantize_range_u8(lo, hi, &scale, &zero);
    }
    scales[m] = scale;
    zeros[m] = zero;
    const float inv_scale = 1.0f / scale;
    for (int k = 0; k < K; ++k) q[k] = quantize_u8(a[k], inv_scale, zero);
    for (int k = K; k < Kp; ++k) q[k] = 0;
  }
}

}  // namespace mt
