// Per-row u8 quantization for AVX-512 (mt/kernels.h, QuantizeRowsU8): the
// float operations of platforms/ref/quantize_rows.cpp one for one (minps/maxps
// for the range, multiply by 1 / scale, clamp to +-512, cvtps2dq rounding half
// to even), so q, scales and zeros are bit-identical to the reference. Used
// by the avx512 and avx512vnni tables. Compiled with the AVX-512 flags of
// kernels_avx512.cpp plus -ffp-contract=off.
// GCC 12 warns inside its own avx512fintrin.h (GCC bug 105593,
// _mm512_undefined_*); fixed in GCC 13.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "mt/kernels.h"  // quantize_range_u8: shared scalar scale and zero
#include "x86/int8_x86.h"

namespace mt::x86 {

namespace {

// 16 floats -> 16 int32 in [0, 255].
inline __m512i quantize16(__m512 a, __m512 inv_scale, __m512i zero) {
  __m512 x = _mm512_mul_ps(a, inv_scale);
  x = _mm512_max_ps(x, _mm512_set1_ps(-512.0f));  // x > -512 ? x : -512 (NaN -> -512)
  x = _mm512_min_ps(x, _mm512_set1_ps(512.0f));
  const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(x), zero);
  return _mm512_min_epi32(_mm512_max_epi32(q, _mm512_setzero_si512()), _mm512_set1_epi32(255));
}

}  // namespace

void quantize_rows_u8_avx512(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                             int32_t* zeros, float static_scale, int32_t static_zero) {
  const int Kp = padded_k_i8(K);
  const int tail = K % 16, body = K - tail;
  const __mmask16 mask = __mmask16((1u << tail) - 1u);
  for (int m = 0; m < M; ++m) {
    const float* a = A + size_t(m) * lda;
    uint8_t* q = Aq + size_t(m) * ldq;
    float scale = static_scale;
    int32_t zero = static_zero;
    if (static_scale <= 0.0f) {
      // minps(x, lo) is x < lo ? x : lo, the reference's comparison. Masked
      // tail lanes read 0, already inside the range.
      __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
      for (int k = 0; k < body; k += 16) {
        const __m512 x = _mm512_loadu_ps(a + k);
        lo = _mm512_min_ps(x, lo);
        hi = _mm512_max_ps(x, hi);
      }
      if (tail) {
        const __m512 x = _mm512_maskz_loadu_ps(mask, a + body);
        lo = _mm512_min_ps(x, lo);
        hi = _mm512_max_ps(x, hi);
      }
      // No NaN is left in the lanes, so any reduction order gives the same value.
      quantize_range_u8(_mm512_reduce_min_ps(lo), _mm512_reduce_max_ps(hi), &scale, &zero);
    }
    scales[m] = scale;
    zeros[m] = zero;
    const __m512 inv_scale = _mm512_set1_ps(1.0f / scale);
    const __m512i vzero = _mm512_set1_epi32(zero);
    for (int k = 0; k < body; k += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k),
                       _mm512_cvtepi32_epi8(quantize16(_mm512_loadu_ps(a + k), inv_scale, vzero)));
    if (tail)
      _mm512_mask_cvtepi32_storeu_epi8(q + body, mask,
                                       quantize16(_mm512_maskz_loadu_ps(mask, a + body), inv_scale, vzero));
    for (int k = K; k < Kp; ++k) q[k] = 0;
  }
}

}  // namespace mt::x86
