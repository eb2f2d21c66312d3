// The int8 GEMM driver shared by the AVX-512BW and AVX512-VNNI kernels:
// blocking, register tiles and the float epilogue, templated on a Dot policy
// that says how a tile accumulates one 64-byte panel row (16 columns x 4 k).
//
// Everything here has internal linkage: each including translation unit
// (compiled with its own ISA flags) gets its own copy, and no symbol with
// VNNI instructions can be picked by the linker for the AVX-512BW table.
//
// A Dot policy provides:
//   kAccPerPanel, kMaxMR, kMaxNP, kGemvNP       register tiling
//   kSplitPrefetchLoop                          k loop shape (gemm_tile_512)
//   Activations broadcast(const uint8_t* a4)    one row's 4 bytes at k
//   Weights load(const int8_t* row64)           one panel row
//   void accumulate(__m512i* acc, Activations, Weights)   kAccPerPanel accumulators
//   __m512i column_sums(const __m512i* acc)     16 int32 sums in column order
#pragma once

#include <immintrin.h>

#include <type_traits>

#include "x86/int8_x86.h"

namespace mt::x86 {

// The fp32 kernels' GELU, out of line in gemm_u8s8_avx512.cpp (AVX-512BW code
// only, so the VNNI translation unit shares no xsimd instantiation with it).
__m512 gelu_f32_avx512(__m512 x);
__m512 swish_f32_avx512(__m512 x);

namespace {

constexpr size_t kL2BlockBytes512 = 512 * 1024;
// How far ahead (in 64-byte k groups of a panel) to prefetch weights.
constexpr int kPrefetchGroups512 = 8;
// Weights larger than this stream from L3 or memory at M >= 2: each k step
// then prefetches (into L2) the same k group of the next tile's panels, a
// whole tile ahead, instead of 8 groups ahead in its own panels. Measured on
// Zen 5: +12-15% on 32000 x 512 at M = 4..32, but 2-5% slower where the
// weights stay in L2 (256 x 256 .. 1024 x 256), hence the threshold.
constexpr size_t kStreamBytes512 = 1024 * 1024;

enum class Prefetch { near, next_tile };

// The float epilogue of mt/kernels.h on the 16 columns of the panel at n0, in
// its order (compiled with -ffp-contract=off: no fma). Columns at or past
// n_end are neither read nor stored.
inline void store_panel_row(const GemmU8S8Args& g, int m, int n0, __m512i acc) {
  const int cols = g.n_end - n0;
  const __mmask16 mask = cols >= kPanelWidth ? __mmask16(0xFFFF) : __mmask16((1u << cols) - 1u);
  const __m512i centred = g.a_zero
                              ? _mm512_sub_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(g.a_zero[m]),
                                                                         _mm512_maskz_loadu_epi32(mask, g.w_sum + n0)))
                              : acc;
  const __m512 s = _mm512_mul_ps(_mm512_set1_ps(g.a_scale[m]), _mm512_maskz_loadu_ps(mask, g.w_scale + n0));
  __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(centred), s);
  if (g.bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, g.bias + n0));
  if (g.act == Activation::relu) x = _mm512_max_ps(x, _mm512_setzero_ps());  // NaN -> 0, as ref
  if (g.act == Activation::gelu) x = gelu_f32_avx512(x);
  if (g.act == Activation::swish) x = swish_f32_avx512(x);
  if (g.residual) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mask, g.residual + size_t(m) * g.ldr + n0));
  _mm512_mask_storeu_ps(g.C + size_t(m) * g.ldc + n0, mask, x);
}

// store_panel_row for a whole MR x NP tile of full panels with
// act == none and no residual: the same operations in the same order.
template <int MR, int NP, class Sums>
inline void store_tile_plain(const GemmU8S8Args& g, int m0, int n0, Sums&& sums) {
  const auto body = [&](auto zero, auto bias) __attribute__((always_inline)) {
    __m512 as[MR];
    __m512i az[MR];
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      as[r] = _mm512_set1_ps(g.a_scale[m0 + r]);
      if constexpr (decltype(zero)::value) az[r] = _mm512_set1_epi32(g.a_zero[m0 + r]);
    }
#pragma GCC unroll 16
    for (int p = 0; p < NP; ++p) {
      const int n = n0 + p * kPanelWidth;
      const __m512 ws = _mm512_loadu_ps(g.w_scale + n);
      __m512i wsum = _mm512_setzero_si512();
      __m512 b = _mm512_setzero_ps();
      if constexpr (decltype(zero)::value) wsum = _mm512_loadu_si512(g.w_sum + n);
      if constexpr (decltype(bias)::value) b = _mm512_loadu_ps(g.bias + n);
#pragma GCC unroll 16
      for (int r = 0; r < MR; ++r) {
        __m512i c = sums(r, p);
        if constexpr (decltype(zero)::value) c = _mm512_sub_epi32(c, _mm512_mullo_epi32(az[r], wsum));
        __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(c), _mm512_mul_ps(as[r], ws));
        if constexpr (decltype(bias)::value) x = _mm512_add_ps(x, b);
        _mm512_storeu_ps(g.C + size_t(m0 + r) * g.ldc + n, x);
      }
    }
  };
  using T = std::true_type;
  using F = std::false_type;
  if (g.a_zero) {
    if (g.bias)
      body(T{}, T{});
    else
      body(T{}, F{});
  } else {
    if (g.bias)
      body(F{}, T{});
    else
      body(F{}, F{});
  }
}

// One MR x NP tile: rows [m0, m0 + MR), panels [p0, p0 + NP).
template <class Dot, int MR, int NP, Prefetch PF = Prefetch::near>
void gemm_tile_512(const GemmU8S8Args& g, int m0, int p0) {
  constexpr int AP = Dot::kAccPerPanel;
  const size_t panel_stride = size_t(g.Kp) * kPanelWidth;
  const int8_t* w = g.Wp + size_t(p0) * panel_stride;
  const uint8_t* a[MR];
  for (int r = 0; r < MR; ++r) a[r] = g.A + size_t(m0 + r) * g.lda;

  __m512i acc[MR][NP * AP];
  // Every loop over the tile's rows and panels is unrolled, here and in the
  // epilogue: an acc index the compiler cannot resolve kept acc in memory,
  // and GCC 12 then stored accumulators to the stack inside the k loop for
  // some tile shapes.
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 16
    for (int j = 0; j < NP * AP; ++j) acc[r][j] = _mm512_setzero_si512();

  const int groups = g.Kp / kInt8KGroup;
  // The near prefetch stays inside the panels: either two loops, the first
  // prefetching (VNNI: with its inline-asm vpdpbusd this gives a loop with no
  // register copies), or one loop with the test (AVX-512BW: 1-2% faster at
  // K >= 1024 on Zen 5 than the split form).
  const auto step = [&](int kg, auto prefetch) __attribute__((always_inline)) {
    const int8_t* wk = w + size_t(kg) * 64;
    typename Dot::Weights wv[NP];
#pragma GCC unroll 8
    for (int p = 0; p < NP; ++p) {
      if constexpr (PF == Prefetch::next_tile)
        __builtin_prefetch(wk + (NP + p) * panel_stride, 0, 2);  // may run past Wp: prefetches do not fault
      else if constexpr (decltype(prefetch)::value)
        __builtin_prefetch(wk + p * panel_stride + kPrefetchGroups512 * 64);
      wv[p] = Dot::load(wk + p * panel_stride);
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const typename Dot::Activations av = Dot::broadcast(a[r] + size_t(kg) * 4);
#pragma GCC unroll 8
      for (int p = 0; p < NP; ++p) Dot::accumulate(&acc[r][p * AP], av, wv[p]);
    }
  };
  if constexpr (Dot::kSplitPrefetchLoop) {
    const int split = groups > kPrefetchGroups512 ? groups - kPrefetchGroups512 : 0;
    int kg = 0;
    for (; kg < split; ++kg) step(kg, std::true_type{});
    for (; kg < groups; ++kg) step(kg, std::false_type{});
  } else {
    for (int kg = 0; kg < groups; ++kg) {
      if (kg + kPrefetchGroups512 < groups)
        step(kg, std::true_type{});
      else
        step(kg, std::false_type{});
    }
  }

  const int n0 = p0 * kPanelWidth;
  if (g.act == Activation::none && !g.residual && n0 + NP * kPanelWidth <= g.n_end) {
    // The common case, full panels and no activation or residual: the same
    // epilogue with its per-row and per-column operands loaded once a tile
    // and no masks or option tests per panel row (fewer instructions between
    // one tile's last vpdpbusd and the next tile's first).
    store_tile_plain<MR, NP>(g, m0, n0, [&](int r, int p) { return Dot::column_sums(&acc[r][p * AP]); });
    return;
  }
#pragma GCC unroll 16
  for (int p = 0; p < NP; ++p)
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) store_panel_row(g, m0 + r, (p0 + p) * kPanelWidth, Dot::column_sums(&acc[r][p * AP]));
}

// Picks the tile instantiation for a run-time (mr, np) with mr <= MR, np <= NP.
template <class Dot, int MR, int NP, Prefetch PF = Prefetch::near>
void gemm_tile_dispatch_512(const GemmU8S8Args& g, int m0, int p0, int mr, int np) {
  if constexpr (MR > 1) {
    if (mr < MR) return gemm_tile_dispatch_512<Dot, MR - 1, NP, PF>(g, m0, p0, mr, np);
  }
  if constexpr (NP > 1) {
    if (np < NP) return gemm_tile_dispatch_512<Dot, MR, NP - 1, PF>(g, m0, p0, mr, np);
  }
  gemm_tile_512<Dot, MR, NP, PF>(g, m0, p0);
}

template <class Dot>
void gemm_u8s8_512(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                   const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                   float* C, size_t ldc, int M, int K, int n_begin, int n_end, Activation act) {
  if (M <= 0 || n_begin >= n_end) return;
  const GemmU8S8Args g{Aq,       lda, Wp, w_sum, w_scale,        a_scale, a_zero, bias,
                       residual, ldr, C,  ldc,   padded_k_i8(K), n_end,   act};
  const int p_begin = n_begin / kPanelWidth;
  const int p_end = (n_end + kPanelWidth - 1) / kPanelWidth;

  // M = 1 (decoding) streams the weights: many panels in flight.
  if (M == 1) {
    for (int p = p_begin; p < p_end; p += Dot::kGemvNP) {
      const int np = p_end - p < Dot::kGemvNP ? p_end - p : Dot::kGemvNP;
      gemm_tile_dispatch_512<Dot, 1, Dot::kGemvNP>(g, 0, p, 1, np);
    }
    return;
  }

  // N blocks sized for L2, each swept by every row tile while it is hot.
  constexpr int NP = Dot::kMaxNP, MR = Dot::kMaxMR;
  const size_t panel_bytes = size_t(g.Kp) * kPanelWidth;
  int block = int(kL2BlockBytes512 / (panel_bytes ? panel_bytes : 1));
  block = block < NP ? NP : block / NP * NP;
  const bool stream = size_t(p_end - p_begin) * panel_bytes > kStreamBytes512;
  for (int pb = p_begin; pb < p_end; pb += block) {
    const int pe = p_end - pb < block ? p_end : pb + block;
    for (int m = 0; m < M; m += MR) {
      const int mr = M - m < MR ? M - m : MR;
      for (int p = pb; p < pe; p += NP) {
        const int np = pe - p < NP ? pe - p : NP;
        if (stream)
          gemm_tile_dispatch_512<Dot, MR, NP, Prefetch::next_tile>(g, m, p, mr, np);
        else
          gemm_tile_dispatch_512<Dot, MR, NP>(g, m, p, mr, np);
      }
    }
  }
}

}  // namespace
}  // namespace mt::x86
