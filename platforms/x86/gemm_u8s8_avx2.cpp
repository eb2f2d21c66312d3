// int8 GEMM for AVX2 (mt/kernels.h, GemmU8S8). Compiled with -mavx2 -mfma
// -ffp-contract=off (platforms/CMakeLists.txt).
//
// vpmaddubsw would saturate (255 * -128 * 2 < INT16_MIN), so both operands are
// widened to int16 and multiplied with vpmaddwd, whose pair sums are exact in
// int32. A 16-byte quarter of a packed_k4n16 panel row (4 columns x 4 k)
// widens to one ymm; vpmaddwd against the row's 4 activations (zero-extended,
// repeated) leaves 2 partial sums per column, added at the end (integers:
// the order does not matter).
#include <immintrin.h>

#include "simd/gemm.hpp"  // gelu_f32<Arch>: the fp32 kernels' GELU
#include "simd/gemm_u8s8_tiles.hpp"
#include "x86/int8_x86.h"

namespace mt::x86 {

namespace {

using Arch = xsimd::fma3<xsimd::avx2>;

// How far ahead (in 64-byte k groups of a panel) to prefetch weights.
constexpr int kPrefetchGroups = 8;

// 4 activation bytes -> int16 a0 a1 a2 a3 in every 64-bit lane.
inline __m256i widen_activations(const uint8_t* p) {
  const __m256i spread = _mm256_setr_epi8(0, -1, 1, -1, 2, -1, 3, -1, 0, -1, 1, -1, 2, -1, 3, -1, 0, -1, 1, -1, 2, -1,
                                          3, -1, 0, -1, 1, -1, 2, -1, 3, -1);
  return _mm256_shuffle_epi8(_mm256_set1_epi32(int32_t(simd::activation_group(p))), spread);
}

// The float epilogue of mt/kernels.h on 8 columns starting at n, in its order.
template <bool Full>
void store_columns(const GemmU8S8Args& g, int m, int n, __m256i acc, __m256i mask) {
  auto load_i = [&](const int32_t* p) {
    return Full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                : _mm256_maskload_epi32(reinterpret_cast<const int*>(p), mask);
  };
  auto load_f = [&](const float* p) { return Full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask); };
  const __m256i centred =
      g.a_zero ? _mm256_sub_epi32(acc, _mm256_mullo_epi32(_mm256_set1_epi32(g.a_zero[m]), load_i(g.w_sum + n))) : acc;
  const __m256 s = _mm256_mul_ps(_mm256_set1_ps(g.a_scale[m]), load_f(g.w_scale + n));
  __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(centred), s);
  if (g.bias) x = _mm256_add_ps(x, load_f(g.bias + n));
  if (g.act == Activation::relu) x = _mm256_max_ps(x, _mm256_setzero_ps());  // NaN -> 0, as ref
  if (g.act == Activation::gelu) x = simd::gelu_f32<Arch>(xsimd::batch<float, Arch>(x));
  if (g.act == Activation::swish) x = simd::swish_f32<Arch>(xsimd::batch<float, Arch>(x));
  if (g.residual) x = _mm256_add_ps(x, load_f(g.residual + size_t(m) * g.ldr + n));
  float* c = g.C + size_t(m) * g.ldc + n;
  if (Full)
    _mm256_storeu_ps(c, x);
  else
    _mm256_maskstore_ps(c, mask, x);
}

// 8 column sums at n; columns at or past n_end are neither read nor stored.
void store_row8(const GemmU8S8Args& g, int m, int n, __m256i acc) {
  const int cols = g.n_end - n;
  if (cols >= 8) return store_columns<true>(g, m, n, acc, __m256i());
  if (cols <= 0) return;
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(cols), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  store_columns<false>(g, m, n, acc, mask);
}

// Pair sums of 4 quarters (columns 0-3, 4-7, 8-11, 12-15) -> 2 x 8 column sums.
inline __m256i column_sums(__m256i q0, __m256i q1) {
  // hadd works per 128-bit lane: c0 c1 c4 c5 | c2 c3 c6 c7, put back in order.
  return _mm256_permute4x64_epi64(_mm256_hadd_epi32(q0, q1), 0xD8);
}

// One MR x NP tile: rows [m0, m0 + MR), panels [p0, p0 + NP).
template <int MR, int NP>
void gemm_tile(const GemmU8S8Args& g, int m0, int p0) {
  constexpr int NA = NP * 4;
  const size_t panel_stride = size_t(g.Kp) * kPanelWidth;
  const int8_t* w = g.Wp + size_t(p0) * panel_stride;
  const uint8_t* a[MR];
  for (int r = 0; r < MR; ++r) a[r] = g.A + size_t(m0 + r) * g.lda;

  __m256i acc[MR][NA];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NA; ++j) acc[r][j] = _mm256_setzero_si256();

  const int groups = g.Kp / kInt8KGroup;
  for (int kg = 0; kg < groups; ++kg) {
    const int8_t* wk = w + size_t(kg) * 64;
    __m256i av[MR];
    for (int r = 0; r < MR; ++r) av[r] = widen_activations(a[r] + size_t(kg) * 4);
    const bool prefetch = kg + kPrefetchGroups < groups;  // stay inside the panels
#pragma GCC unroll 4
    for (int p = 0; p < NP; ++p) {
      if (prefetch) __builtin_prefetch(wk + p * panel_stride + kPrefetchGroups * 64);
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i wv =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wk + p * panel_stride + j * 16)));
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r)
          acc[r][p * 4 + j] = _mm256_add_epi32(acc[r][p * 4 + j], _mm256_madd_epi16(wv, av[r]));
      }
    }
  }

  for (int p = 0; p < NP; ++p) {
    const int n0 = (p0 + p) * kPanelWidth;
    for (int r = 0; r < MR; ++r) {
      store_row8(g, m0 + r, n0, column_sums(acc[r][p * 4], acc[r][p * 4 + 1]));
      store_row8(g, m0 + r, n0 + 8, column_sums(acc[r][p * 4 + 2], acc[r][p * 4 + 3]));
    }
  }
}

// Accumulators per row and panel: 4 ymm, i.e. MR = 2 rows x 1 panel is 8 of
// the 16 ymm; the rest hold the widened weights and activations.
struct Avx2Kernel {
  static constexpr int kMaxMR = 2;
  static constexpr int kMaxNP = 1;
  static constexpr int kGemvNP = 3;  // M = 1 (decoding): more panels at once, so more loads in flight
  template <int MR, int NP>
  static void tile(const GemmU8S8Args& g, int m0, int p0) {
    gemm_tile<MR, NP>(g, m0, p0);
  }
};

}  // namespace

void gemm_u8s8_avx2(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                    const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                    float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act) {
  const GemmU8S8Args g{Aq,       lda, Wp, w_sum, w_scale,        a_scale, a_zero, bias,
                       residual, ldr, C,  ldc,   padded_k_i8(K), n_end,   act};
  simd::run_gemm_u8s8<Avx2Kernel>(g, M, n_begin, n_end);
}

}  // namespace mt::x86
