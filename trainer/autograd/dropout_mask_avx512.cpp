// dropout_mask_f32 for AVX-512 (F and DQ), compiled with those flags alone
// (trainer/CMakeLists.txt). Intrinsics and constants only: no inline
// function of a shared header is called here, as a copy compiled here could
// be the one the linker keeps for callers on CPUs without AVX-512.

// GCC 12 warns inside its own avx512fintrin.h (_mm512_srli_epi64's
// _mm512_undefined_epi32, GCC bug 105593); fixed in GCC 13.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "autograd/dropout_mask.hpp"
#include "support/splitmix64.hpp"

namespace mt::autograd {

namespace {

// detail::splitmix64 of eight counters.
__m512i splitmix64_x8(__m512i z) {
  z = _mm512_add_epi64(z, _mm512_set1_epi64(int64_t(detail::kSplitMix64Gamma)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)),
                         _mm512_set1_epi64(int64_t(detail::kSplitMix64Mul1)));
  z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)),
                         _mm512_set1_epi64(int64_t(detail::kSplitMix64Mul2)));
  return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

// Bit j set where element first + j is kept, for 16 elements.
__mmask16 kept_x16(__m512i first, __m512i threshold) {
  const __m512i eight = _mm512_set1_epi64(8);
  const __mmask8 lo = _mm512_cmpge_epu64_mask(_mm512_srli_epi64(splitmix64_x8(first), 11), threshold);
  const __mmask8 hi =
      _mm512_cmpge_epu64_mask(_mm512_srli_epi64(splitmix64_x8(_mm512_add_epi64(first, eight)), 11), threshold);
  return __mmask16(unsigned(lo) | (unsigned(hi) << 8));
}

}  // namespace

void dropout_mask_f32_avx512(const float* x, float* y, float* mask, int64_t begin, int64_t end, uint64_t key,
                             uint64_t threshold, float keep_scale) {
  const __m512 scale = _mm512_set1_ps(keep_scale);
  const __m512i t = _mm512_set1_epi64(int64_t(threshold));
  const __m512i sixteen = _mm512_set1_epi64(16);
  // Counters key + i of elements i .. i + 7 (lanes in order).
  __m512i counter =
      _mm512_add_epi64(_mm512_set1_epi64(int64_t(key + uint64_t(begin))), _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));
  int64_t i = begin;
  for (; i + 16 <= end; i += 16, counter = _mm512_add_epi64(counter, sixteen)) {
    const __m512 m = _mm512_maskz_mov_ps(kept_x16(counter, t), scale);
    _mm512_storeu_ps(mask + i, m);
    _mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), m));
  }
  if (i < end) {  // the last 1-15, under a mask
    const __mmask16 live = __mmask16((1u << unsigned(end - i)) - 1);
    const __m512 m = _mm512_maskz_mov_ps(kept_x16(counter, t), scale);
    _mm512_mask_storeu_ps(mask + i, live, m);
    _mm512_mask_storeu_ps(y + i, live, _mm512_mul_ps(_mm512_maskz_loadu_ps(live, x + i), m));
  }
}

}  // namespace mt::autograd
