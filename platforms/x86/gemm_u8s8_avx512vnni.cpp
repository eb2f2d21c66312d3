// int8 GEMM for AVX512-VNNI (mt/kernels.h, GemmU8S8): one vpdpbusd per
// packed_k4n16 panel row (16 columns x 4 k, u8 activations x s8 weights,
// 4 products summed into each int32 lane without intermediate saturation).
// Compiled with the AVX-512 flags plus -mavx512vnni -ffp-contract=off.

// GCC 12 warns inside its own avx512fintrin.h (GCC bug 105593,
// _mm512_undefined_*); fixed in GCC 13.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "x86/gemm_u8s8_avx512.hpp"

namespace mt::x86 {

namespace {

struct DotAvx512vnni {
  // One accumulator per row and panel: 4 x 3 = 12 zmm. Measured on Zen 5
  // (GCC 12): tiles of more than 16 accumulators (8 x 3, 6 x 4, 5 x 4) once
  // ran at half the speed of 4 x 3, because GCC stored accumulators to the
  // stack inside the k loop; with every tile loop unrolled (gemm_tile_512)
  // they run clean but still 1-3% slower than 4 x 3 (as do 4 x 4, 6 x 3,
  // 8 x 2), which reaches 430-466 GOP/s at M >= 4 (peak ~469).
  // M = 1: 6 panels in flight measured 3-9% faster than 8 (4 to 7 alike).
  static constexpr int kAccPerPanel = 1;
  static constexpr int kMaxMR = 4;
  static constexpr int kMaxNP = 3;
  static constexpr int kGemvNP = 6;
  static constexpr bool kSplitPrefetchLoop = true;

  using Activations = __m512i;
  using Weights = __m512i;

  static __m512i broadcast(const uint8_t* a4) { return _mm512_set1_epi32(int32_t(simd::activation_group(a4))); }
  static __m512i load(const int8_t* row64) { return _mm512_loadu_si512(row64); }
  // Inline asm rather than _mm512_dpbusd_epi32: with the intrinsic GCC 12
  // copies every accumulator to a fresh register each k step (two vmovdqa per
  // vpdpbusd). Zen 5 mostly absorbs the copies; without them the tiles ran
  // 1-2% faster at M >= 4 (bench, 2026-11-23).
  static void accumulate(__m512i* acc, __m512i a, __m512i w) {
    __m512i t = acc[0];
    __asm__("vpdpbusd %2, %1, %0" : "+v"(t) : "v"(a), "v"(w));
    acc[0] = t;
  }
  static __m512i column_sums(const __m512i* acc) { return acc[0]; }
};

}  // namespace

void gemm_u8s8_avx512vnni(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                          const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual,
                          size_t ldr, float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end,
                          Activation act) {
  gemm_u8s8_512<DotAvx512vnni>(Aq, lda, Wp, w_sum, w_scale, a_scale, a_zero, bias, residual, ldr, C, ldc, M, K, n_begin,
                               n_end, act);
}

}  // namespace mt::x86
