// int8 GEMM for AVX-512BW without VNNI (mt/kernels.h, GemmU8S8). Compiled
// with the AVX-512 flags of kernels_avx512.cpp plus -ffp-contract=off.
//
// vpmaddubsw would saturate (255 * -128 * 2 < INT16_MIN), so both operands are
// widened to int16 and multiplied with vpmaddwd, whose pair sums are exact in
// int32. Each half of a packed_k4n16 panel row (8 columns x 4 k) widens to a
// zmm; vpmaddwd against the row's 4 activations (zero-extended, repeated)
// leaves 2 partial sums per column, added at the end (integers: exact).

// GCC 12 warns inside its own avx512fintrin.h when xsimd's erf is inlined
// (GCC bug 105593, _mm512_undefined_ps); fixed in GCC 13.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "simd/gemm.hpp"  // gelu_f32<Arch>: the fp32 kernels' GELU
#include "x86/gemm_u8s8_avx512.hpp"

namespace mt::x86 {

__m512 gelu_f32_avx512(__m512 x) { return simd::gelu_f32<xsimd::avx512bw>(xsimd::batch<float, xsimd::avx512bw>(x)); }

__m512 swish_f32_avx512(__m512 x) { return simd::swish_f32<xsimd::avx512bw>(xsimd::batch<float, xsimd::avx512bw>(x)); }

namespace {

struct DotAvx512bw {
  // Per row and panel 2 zmm of pair sums: 4 x 2 x 2 = 16 accumulators plus
  // 4 widened weight rows and the activations stay within 32 zmm.
  static constexpr int kAccPerPanel = 2;
  static constexpr int kMaxMR = 4;
  static constexpr int kMaxNP = 2;
  static constexpr int kGemvNP = 4;
  static constexpr bool kSplitPrefetchLoop = false;

  using Activations = __m512i;
  struct Weights {
    __m512i lo, hi;  // columns 0-7 and 8-15, 4 int16 k each
  };

  // 4 activation bytes -> int16 a0 a1 a2 a3 in every 64-bit lane.
  static __m512i broadcast(const uint8_t* a4) {
    const __m512i spread =
        _mm512_set4_epi32(int32_t(0xFF03FF02), int32_t(0xFF01FF00), int32_t(0xFF03FF02), int32_t(0xFF01FF00));
    return _mm512_shuffle_epi8(_mm512_set1_epi32(int32_t(simd::activation_group(a4))), spread);
  }
  static Weights load(const int8_t* row64) {
    return {_mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row64))),
            _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row64 + 32)))};
  }
  static void accumulate(__m512i* acc, __m512i a, const Weights& w) {
    acc[0] = _mm512_add_epi32(acc[0], _mm512_madd_epi16(w.lo, a));
    acc[1] = _mm512_add_epi32(acc[1], _mm512_madd_epi16(w.hi, a));
  }
  // Lanes 2c and 2c + 1 hold column c's two partial sums.
  static __m512i column_sums(const __m512i* acc) {
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    return _mm512_add_epi32(_mm512_permutex2var_epi32(acc[0], even, acc[1]),
                            _mm512_permutex2var_epi32(acc[0], odd, acc[1]));
  }
};

}  // namespace

void gemm_u8s8_avx512(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                      const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                      float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act) {
  gemm_u8s8_512<DotAvx512bw>(Aq, lda, Wp, w_sum, w_scale, a_scale, a_zero, bias, residual, ldr, C, ldc, M, K, n_begin,
                             n_end, act);
}

}  // namespace mt::x86
