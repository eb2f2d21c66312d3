// The x86 int8 kernels (mt/kernels.h, "--- int8 ---"), written with
// intrinsics: xsimd 8.1 knows no VNNI. Each lives in a translation unit
// compiled with its ISA flags; the kernel tables pick them up.
#pragma once

#include "mt/kernels.h"
#include "simd/gemm_u8s8_args.hpp"

namespace mt::x86 {

using simd::GemmU8S8Args;

void gemm_u8s8_avx2(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                    const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                    float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act);
void gemm_u8s8_avx512(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                      const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                      float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act);
void gemm_u8s8_avx512vnni(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                          const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual,
                          size_t ldr, float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end,
                          Activation act);

void quantize_rows_u8_avx2(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                           int32_t* zeros, float static_scale, int32_t static_zero);
void quantize_rows_u8_avx512(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                             int32_t* zeros, float static_scale, int32_t static_zero);

}  // namespace mt::x86
