// int8 GEMM on the Armv8.2 dot-product instructions (mt/kernels.h,
// GemmU8S8). Compiled with -march=armv8.2-a+dotprod and called only where
// the CPU reports them (dispatch.cpp); the epilogue is the baseline unit's.
//
// udot multiplies u8 by u8, and sdot s8 by s8; our operands are u8
// activations and s8 weights (the reference's, so every ISA gives the same
// bits). Flipping a weight's sign bit gives w + 128 as u8, so
//   sum a * w = udot(a, w ^ 0x80) - 128 * sum a,
// with sum a taken once per row. One udot is one 16-byte quarter of a panel
// row (4 columns x 4 k) against the row's 4 activations, straight into the
// 4 columns' sums: no widening, no fold at the end.

#include "simd/gemm_u8s8_tiles.hpp"
#include "arm/int8_arm.h"

namespace mt::arm {

namespace {

// sum_k a[k] for k < Kp (a multiple of 4; the row is zero past K).
inline uint32_t row_sum(const uint8_t* a, int Kp) {
  uint32x4_t s = vdupq_n_u32(0);
  int k = 0;
  for (; k + 16 <= Kp; k += 16) s = vpadalq_u16(s, vpaddlq_u8(vld1q_u8(a + k)));
  uint32_t total = vaddvq_u32(s);
  for (; k < Kp; ++k) total += a[k];
  return total;
}

struct DotprodKernel {
  // 4 accumulators per row and panel: MR = 4 rows share each flipped weight
  // quarter; M = 1 takes 4 panels (16 accumulators) for loads in flight.
  static constexpr int kMaxMR = 4;
  static constexpr int kMaxNP = 1;
  static constexpr int kGemvNP = 4;
  static constexpr int kPrefetchGroups = 8;

  template <int MR, int NP>
  static void tile(const GemmU8S8Args& g, int m0, int p0) {
    const size_t panel_stride = size_t(g.Kp) * kPanelWidth;
    const uint8_t* w = reinterpret_cast<const uint8_t*>(g.Wp) + size_t(p0) * panel_stride;
    const uint8_t* a[MR];
    for (int r = 0; r < MR; ++r) a[r] = g.A + size_t(m0 + r) * g.lda;

    uint32x4_t acc[MR][NP * 4];
    for (int r = 0; r < MR; ++r)
      for (int i = 0; i < NP * 4; ++i) acc[r][i] = vdupq_n_u32(0);

    const uint8x16_t flip = vdupq_n_u8(0x80);
    const int groups = g.Kp / kInt8KGroup;
    for (int kg = 0; kg < groups; ++kg) {
      const uint8_t* wk = w + size_t(kg) * 64;
      uint8x16_t av[MR];  // the row's 4 activations in every 32-bit lane
      for (int r = 0; r < MR; ++r)
        av[r] = vreinterpretq_u8_u32(vdupq_n_u32(simd::activation_group(a[r] + size_t(kg) * 4)));
      const bool prefetch = kg + kPrefetchGroups < groups;  // stay inside the panels
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        if (prefetch) __builtin_prefetch(wk + p * panel_stride + kPrefetchGroups * 64);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          const uint8x16_t wv = veorq_u8(vld1q_u8(wk + p * panel_stride + j * 16), flip);
#pragma GCC unroll 4
          for (int r = 0; r < MR; ++r) acc[r][p * 4 + j] = vdotq_u32(acc[r][p * 4 + j], wv, av[r]);
        }
      }
    }

    for (int r = 0; r < MR; ++r) {
      // Modulo 2^32 throughout: exact wherever the true sum fits int32, as the reference's.
      const uint32x4_t offset = vdupq_n_u32(128u * row_sum(a[r], g.Kp));
      for (int p = 0; p < NP; ++p) {
        const int n0 = (p0 + p) * kPanelWidth;
        for (int j = 0; j < 4; ++j)
          store_columns4(g, m0 + r, n0 + 4 * j, vreinterpretq_s32_u32(vsubq_u32(acc[r][p * 4 + j], offset)));
      }
    }
  }
};

}  // namespace

void gemm_u8s8_neon_dotprod(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                            const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual,
                            size_t ldr, float* C, size_t ldc, int M, int /*N*/, int K, int n_begin, int n_end,
                            Activation act) {
  const GemmU8S8Args g{Aq,       lda, Wp, w_sum, w_scale,        a_scale, a_zero, bias,
                       residual, ldr, C,  ldc,   padded_k_i8(K), n_end,   act};
  simd::run_gemm_u8s8<DotprodKernel>(g, M, n_begin, n_end);
}

}  // namespace mt::arm
