// Per-row u8 quantization for AVX2 (mt/kernels.h, QuantizeRowsU8): the float
// operations of platforms/ref/quantize_rows.cpp one for one (minps/maxps for
// the range, multiply by 1 / scale, clamp to +-512, cvtps2dq rounding half to
// even), so q, scales and zeros are bit-identical to the reference.
// Compiled with -mavx2 -mfma -ffp-contract=off.
#include <immintrin.h>

#include <cstring>

#include "mt/kernels.h"  // quantize_range_u8: shared scalar scale and zero
#include "x86/int8_x86.h"

namespace mt::x86 {

namespace {

// Lanes [0, n) of 8.
inline __m256i tail_mask(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// min and max of 8 lanes; no NaN is left in them (minps/maxps skipped it).
inline float reduce_min(__m256 v) {
  __m128 x = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_min_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_min_ss(x, _mm_movehdup_ps(x)));
}
inline float reduce_max(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}

// 8 floats -> 8 bytes (in the low half of the result).
inline __m128i quantize8(__m256 a, __m256 inv_scale, __m256i zero) {
  __m256 x = _mm256_mul_ps(a, inv_scale);
  x = _mm256_max_ps(x, _mm256_set1_ps(-512.0f));  // x > -512 ? x : -512 (NaN -> -512)
  x = _mm256_min_ps(x, _mm256_set1_ps(512.0f));
  __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(x), zero);
  q = _mm256_min_epi32(_mm256_max_epi32(q, _mm256_setzero_si256()), _mm256_set1_epi32(255));
  const __m128i q16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return _mm_packus_epi16(q16, q16);
}

}  // namespace

void quantize_rows_u8_avx2(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                           int32_t* zeros, float static_scale, int32_t static_zero) {
  const int Kp = padded_k_i8(K);
  const int tail = K % 8, body = K - tail;
  const __m256i mask = tail_mask(tail);
  for (int m = 0; m < M; ++m) {
    const float* a = A + size_t(m) * lda;
    uint8_t* q = Aq + size_t(m) * ldq;
    float scale = static_scale;
    int32_t zero = static_zero;
    if (static_scale <= 0.0f) {
      // minps(x, lo) is x < lo ? x : lo, the reference's comparison. Masked
      // tail lanes read 0, already inside the range.
      __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
      for (int k = 0; k < body; k += 8) {
        const __m256 x = _mm256_loadu_ps(a + k);
        lo = _mm256_min_ps(x, lo);
        hi = _mm256_max_ps(x, hi);
      }
      if (tail) {
        const __m256 x = _mm256_maskload_ps(a + body, mask);
        lo = _mm256_min_ps(x, lo);
        hi = _mm256_max_ps(x, hi);
      }
      quantize_range_u8(reduce_min(lo), reduce_max(hi), &scale, &zero);
    }
    scales[m] = scale;
    zeros[m] = zero;
    const __m256 inv_scale = _mm256_set1_ps(1.0f / scale);
    const __m256i vzero = _mm256_set1_epi32(zero);
    for (int k = 0; k < body; k += 8)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(q + k), quantize8(_mm256_loadu_ps(a + k), inv_scale, vzero));
    if (tail) {
      alignas(16) uint8_t bytes[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(bytes),
                      quantize8(_mm256_maskload_ps(a + body, mask), inv_scale, vzero));
      std::memcpy(q + body, bytes, size_t(tail));
    }
    for (int k = K; k < Kp; ++k) q[k] = 0;
  }
}

}  // namespace mt::x86
