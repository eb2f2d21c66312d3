// int8 GEMM on WebAssembly SIMD128 (mt/kernels.h, GemmU8S8).
//
// u8 x s8 products fit int16 exactly (255 * -128 = -32640), so a 16-byte
// quarter of a panel row (4 columns x 4 k) widens to two i16x8, and
// i32x4.dot_i16x8_s against the row's 4 activations (repeated) leaves
// 2 columns x 2 partial sums per accumulator, folded at the end. Wasm has
// no fused multiply-add, so the epilogue's float steps are the reference's.
#include <wasm_simd128.h>

#include <cstring>

#include "wasm/sse_conversions.h"  // first: before xsimd sees the SSE intrinsics
#include "simd/gemm.hpp"           // gelu_f32<Arch>: the fp32 kernels' GELU
#include "simd/gemm_u8s8_tiles.hpp"
#include "wasm/int8_wasm.h"

namespace mt::wasm {

namespace {

using simd::GemmU8S8Args;
using Arch = xsimd::sse4_1;  // the fp32 kernels' arch, SIMD128 underneath

template <bool Full>
inline v128_t load4(const void* p, int cols) {
  if constexpr (Full) return wasm_v128_load(p);
  alignas(16) uint32_t t[4] = {};
  std::memcpy(t, p, size_t(cols) * 4);
  return wasm_v128_load(t);
}

// Out of line: inlined into every tile shape and both epilogues, GELU made
// mt_translate.wasm 49 KB larger (651 -> 602 KB, measured at -O3).
__attribute__((noinline)) v128_t gelu4(v128_t x) {
  return v128_t(__m128(simd::gelu_f32<Arch>(xsimd::batch<float, Arch>(__m128(x)))));
}
__attribute__((noinline)) v128_t swish4(v128_t x) {
  return v128_t(__m128(simd::swish_f32<Arch>(xsimd::batch<float, Arch>(__m128(x)))));
}

// mt/kernels.h's epilogue in its order on the 4 columns [n, n + cols).
template <bool Full>
void epilogue4(const GemmU8S8Args& g, int m, int n, int cols, v128_t acc) {
  const v128_t centred =
      g.a_zero ? wasm_i32x4_sub(acc, wasm_i32x4_mul(load4<Full>(g.w_sum + n, cols), wasm_i32x4_splat(g.a_zero[m])))
               : acc;
  const v128_t s = wasm_f32x4_mul(wasm_f32x4_splat(g.a_scale[m]), load4<Full>(g.w_scale + n, cols));
  v128_t x = wasm_f32x4_mul(wasm_f32x4_convert_i32x4(centred), s);
  if (g.bias) x = wasm_f32x4_add(x, load4<Full>(g.bias + n, cols));
  if (g.act == Activation::relu) {
    const v128_t zero = wasm_f32x4_splat(0.0f);
    x = wasm_v128_bitselect(x, zero, wasm_f32x4_gt(x, zero));  // x > 0 ? x : 0 (NaN -> 0)
  }
  if (g.act == Activation::gelu) x = gelu4(x);
  if (g.act == Activation::swish) x = swish4(x);
  if (g.residual) x = wasm_f32x4_add(x, load4<Full>(g.residual + size_t(m) * g.ldr + n, cols));
  float* c = g.C + size_t(m) * g.ldc + n;
  if constexpr (Full) {
    wasm_v128_store(c, x);
  } else {
    alignas(16) float t[4];
    wasm_v128_store(t, x);
    std::memcpy(c, t, size_t(cols) * sizeof(float));
  }
}

__attribute__((always_inline)) inline void store_columns4(const GemmU8S8Args& g, int m, int n, v128_t acc) {
  const int cols = g.n_end - n;
  if (cols >= 4) return epilogue4<true>(g, m, n, 4, acc);
  if (cols > 0) epilogue4<false>(g, m, n, cols, acc);
}

struct Simd128Kernel {
  // 8 accumulators per row and panel; 4 rows share each widened weight
  // quarter, though their 32 accumulators exceed an x86 host's 16 xmm
  // registers. mt_translate.js on the int8 model and 1,000 Multi30k
  // sentences under Node.js 20, run by hand: 4 rows took 3.2-3.5 s greedy
  // and 10.8-11.7 s beam 4, 2 rows 4.1 s and 13.2 s (runs vary by ~15%).
  static constexpr int kMaxMR = 4;
  static constexpr int kMaxNP = 1;
  static constexpr int kGemvNP = 2;

  template <int MR, int NP>
  static void tile(const GemmU8S8Args& g, int m0, int p0) {
    const size_t panel_stride = size_t(g.Kp) * kPanelWidth;
    const int8_t* w = g.Wp + size_t(p0) * panel_stride;
    const uint8_t* a[MR];
    for (int r = 0; r < MR; ++r) a[r] = g.A + size_t(m0 + r) * g.lda;

    // acc[r][p * 8 + 2 * j + h]: quarter j of panel p, its columns 2h and 2h + 1.
    v128_t acc[MR][NP * 8];
    for (int r = 0; r < MR; ++r)
      for (int i = 0; i < NP * 8; ++i) acc[r][i] = wasm_i32x4_splat(0);

    const int groups = g.Kp / kInt8KGroup;
    for (int kg = 0; kg < groups; ++kg) {
      const int8_t* wk = w + size_t(kg) * 64;
      v128_t av[MR];  // a0 a1 a2 a3 a0 a1 a2 a3 as i16
      for (int r = 0; r < MR; ++r)
        av[r] = wasm_u16x8_extend_low_u8x16(wasm_i32x4_splat(int32_t(simd::activation_group(a[r] + size_t(kg) * 4))));
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const v128_t wv = wasm_v128_load(wk + p * panel_stride + j * 16);
          const v128_t lo = wasm_i16x8_extend_low_i8x16(wv);   // columns 4j, 4j + 1
          const v128_t hi = wasm_i16x8_extend_high_i8x16(wv);  // columns 4j + 2, 4j + 3
          for (int r = 0; r < MR; ++r) {
            acc[r][p * 8 + 2 * j] = wasm_i32x4_add(acc[r][p * 8 + 2 * j], wasm_i32x4_dot_i16x8(lo, av[r]));
            acc[r][p * 8 + 2 * j + 1] = wasm_i32x4_add(acc[r][p * 8 + 2 * j + 1], wasm_i32x4_dot_i16x8(hi, av[r]));
          }
        }
      }
    }

    for (int p = 0; p < NP; ++p) {
      const int n0 = (p0 + p) * kPanelWidth;
      for (int r = 0; r < MR; ++r)
        for (int j = 0; j < 4; ++j) {
          // [c0 c0' c1 c1'] and [c2 c2' c3 c3'] -> [c0 c1 c2 c3]
          const v128_t x = acc[r][p * 8 + 2 * j], y = acc[r][p * 8 + 2 * j + 1];
          const v128_t sums =
              wasm_i32x4_add(wasm_i32x4_shuffle(x, y, 0, 2, 4, 6), wasm_i32x4_shuffle(x, y, 1, 3, 5, 7));
          store_columns4(g, m0 + r, n0 + 4 * j, sums);
        }
    }
  }
};

}  // namespace

void gemm_u8s8_simd128(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                       const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual,
                       size_t ldr, float* C, size_t ldc, int M, int /*N*/, int K, int n_begin, int n_end,
                       Activation act) {
  const GemmU8S8Args g{Aq,       lda, Wp, w_sum, w_scale,        a_scale, a_zero, bias,
                       residual, ldr, C,  ldc,   padded_k_i8(K), n_end,   act};
  simd::run_gemm_u8s8<Simd128Kernel>(g, M, n_begin, n_end);
}

}  // namespace mt::wasm
