// The WebAssembly int8 kernels (mt/kernels.h, "--- int8 ---"), written with
// <wasm_simd128.h>: xsimd 8.1 has no wasm architecture.
#pragma once

#include "mt/kernels.h"

namespace mt::wasm {

void gemm_u8s8_simd128(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                       const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual,
                       size_t ldr, float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act);

void quantize_rows_u8_simd128(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                              int32_t* zeros, float static_scale, int32_t static_zero);

}  // namespace mt::wasm
