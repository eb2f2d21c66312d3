// int8 GEMM on baseline NEON (mt/kernels.h, GemmU8S8), for CPUs without the
// dot-product instructions, and the float epilogue both aarch64 GEMMs share.
// Compiled with -ffp-contract=off (platforms/CMakeLists.txt).
//
// u8 x s8 products fit int16 exactly (255 * -128 = -32640), so a 16-byte
// quarter of a panel row (4 columns x 4 k) widens to two int16x8, is
// multiplied by the row's 4 activations (repeated) and pair-added into
// int32: each accumulator holds 2 columns x 2 partial sums, folded at the end.
#include <cstring>

#include "simd/gemm_u8s8_tiles.hpp"
#include "arm/int8_arm.h"
#include "simd/gemm.hpp"  // gelu_f32<Arch>: the fp32 kernels' GELU

namespace mt::arm {

namespace {

using Arch = xsimd::neon64;

// 4 values at p, or the first `cols` of them and zeros (nothing past is read).
template <bool Full>
inline float32x4_t load4(const float* p, int cols) {
  if constexpr (Full) return vld1q_f32(p);
  float t[4] = {};
  std::memcpy(t, p, size_t(cols) * sizeof(float));
  return vld1q_f32(t);
}
template <bool Full>
inline int32x4_t load4(const int32_t* p, int cols) {
  if constexpr (Full) return vld1q_s32(p);
  int32_t t[4] = {};
  std::memcpy(t, p, size_t(cols) * sizeof(int32_t));
  return vld1q_s32(t);
}

// mt/kernels.h's epilogue in its order; relu as the reference's
// x > 0 ? x : 0 (NaN -> 0), which fmax would not give.
template <bool Full>
void epilogue4(const GemmU8S8Args& g, int m, int n, int cols, int32x4_t acc) {
  const int32x4_t centred = g.a_zero ? vsubq_s32(acc, vmulq_n_s32(load4<Full>(g.w_sum + n, cols), g.a_zero[m])) : acc;
  const float32x4_t s = vmulq_n_f32(load4<Full>(g.w_scale + n, cols), g.a_scale[m]);
  float32x4_t x = vmulq_f32(vcvtq_f32_s32(centred), s);
  if (g.bias) x = vaddq_f32(x, load4<Full>(g.bias + n, cols));
  if (g.act == Activation::relu) x = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(0.0f)), x, vdupq_n_f32(0.0f));
  if (g.act == Activation::gelu) x = simd::gelu_f32<Arch>(xsimd::batch<float, Arch>(x));
  if (g.act == Activation::swish) x = simd::swish_f32<Arch>(xsimd::batch<float, Arch>(x));
  if (g.residual) x = vaddq_f32(x, load4<Full>(g.residual + size_t(m) * g.ldr + n, cols));
  float* c = g.C + size_t(m) * g.ldc + n;
  if constexpr (Full) {
    vst1q_f32(c, x);
  } else {
    float t[4];
    vst1q_f32(t, x);
    std::memcpy(c, t, size_t(cols) * sizeof(float));
  }
}

struct NeonKernel {
  // 8 accumulators per row and panel: MR = 2 x NP = 1 is 16 of the 32 q-registers.
  static constexpr int kMaxMR = 2;
  static constexpr int kMaxNP = 1;
  static constexpr int kGemvNP = 2;
  static constexpr int kPrefetchGroups = 8;

  template <int MR, int NP>
  static void tile(const GemmU8S8Args& g, int m0, int p0) {
    const size_t panel_stride = size_t(g.Kp) * kPanelWidth;
    const int8_t* w = g.Wp + size_t(p0) * panel_stride;
    const uint8_t* a[MR];
    for (int r = 0; r < MR; ++r) a[r] = g.A + size_t(m0 + r) * g.lda;

    // acc[r][p * 8 + 2 * j + h]: quarter j of panel p, its columns 2h and 2h + 1.
    int32x4_t acc[MR][NP * 8];
    for (int r = 0; r < MR; ++r)
      for (int i = 0; i < NP * 8; ++i) acc[r][i] = vdupq_n_s32(0);

    const int groups = g.Kp / kInt8KGroup;
    for (int kg = 0; kg < groups; ++kg) {
      const int8_t* wk = w + size_t(kg) * 64;
      int16x8_t av[MR];  // a0 a1 a2 a3 a0 a1 a2 a3
      for (int r = 0; r < MR; ++r)
        av[r] = vreinterpretq_s16_u16(
            vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(simd::activation_group(a[r] + size_t(kg) * 4)))));
      const bool prefetch = kg + kPrefetchGroups < groups;  // stay inside the panels
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        if (prefetch) __builtin_prefetch(wk + p * panel_stride + kPrefetchGroups * 64);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const int8x16_t wv = vld1q_s8(wk + p * panel_stride + j * 16);
          const int16x8_t lo = vmovl_s8(vget_low_s8(wv));  // columns 4j, 4j + 1
          const int16x8_t hi = vmovl_high_s8(wv);          // columns 4j + 2, 4j + 3
#pragma GCC unroll 4
          for (int r = 0; r < MR; ++r) {
            acc[r][p * 8 + 2 * j] = vpadalq_s16(acc[r][p * 8 + 2 * j], vmulq_s16(lo, av[r]));
            acc[r][p * 8 + 2 * j + 1] = vpadalq_s16(acc[r][p * 8 + 2 * j + 1], vmulq_s16(hi, av[r]));
          }
        }
      }
    }

    for (int p = 0; p < NP; ++p) {
      const int n0 = (p0 + p) * kPanelWidth;
      for (int r = 0; r < MR; ++r)
        for (int j = 0; j < 4; ++j)
          store_columns4(g, m0 + r, n0 + 4 * j, vpaddq_s32(acc[r][p * 8 + 2 * j], acc[r][p * 8 + 2 * j + 1]));
    }
  }
};

}  // namespace

void store_columns4(const GemmU8S8Args& g, int m, int n, int32x4_t acc) {
  const int cols = g.n_end - n;
  if (cols >= 4) return epilogue4<true>(g, m, n, 4, acc);
  if (cols > 0) epilogue4<false>(g, m, n, cols, acc);
}

void gemm_u8s8_neon(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                    const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                    float* C, size_t ldc, int M, int /*N*/, int K, int n_begin, int n_end, Activation act) {
  const GemmU8S8Args g{Aq,       lda, Wp, w_sum, w_scale,        a_scale, a_zero, bias,
                       residual, ldr, C,  ldc,   padded_k_i8(K), n_end,   act};
  simd::run_gemm_u8s8<NeonKernel>(g, M, n_begin, n_end);
}

}  // namespace mt::arm
