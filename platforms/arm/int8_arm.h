// The aarch64 int8 kernels (mt/kernels.h, "--- int8 ---"), written with NEON
// intrinsics: xsimd 8.1 has no dot-product instructions. The dot-product GEMM
// lives in its own translation unit, compiled for armv8.2-a+dotprod and only
// called where the CPU reports it (dispatch.cpp).
#pragma once

#include <arm_neon.h>

#include "mt/kernels.h"
#include "simd/gemm_u8s8_args.hpp"

namespace mt::arm {

using simd::GemmU8S8Args;

// udot on the weights offset to u8, NEON without it: both give the reference's bits.
void gemm_u8s8_neon(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                    const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                    float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act);
void gemm_u8s8_neon_dotprod(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                            const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual,
                            size_t ldr, float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end,
                            Activation act);

void quantize_rows_u8_neon(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                           int32_t* zeros, float static_scale, int32_t static_zero);

// The float epilogue of mt/kernels.h on the 4 columns [n, n + 4) of row m,
// given their exact sums acc[m, n] (columns at or past n_end are neither read
// nor written). Out of line in the baseline translation unit, so the
// dot-product one instantiates no NEON helper (GELU) of its own.
void store_columns4(const GemmU8S8Args& g, int m, int n, int32x4_t acc);

}  // namespace mt::arm
