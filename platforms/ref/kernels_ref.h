// Scalar reference kernels: plain C++, the ground truth every SIMD table is
// tested against. Signatures follow the typedefs in mt/kernels.h.
#pragma once

#include "mt/kernels.h"

namespace mt {

void gemm_f32_ref(const float* A, size_t lda, const float* Wp, const float* bias, const float* residual, size_t ldr,
                  float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act);
void layer_norm_f32_ref(const float* x, const float* gamma, const float* beta, float* y, int C, float eps);
void softmax_f32_ref(float* x, int n);
float log_softmax_f32_ref(const float* x, float* y, int n);
int argmax_f32_ref(const float* x, int n, float* max_value);
void top_k_f32_ref(const float* x, int n, int k, float* values, int32_t* indices, int* count);
void log_sum_exp_f32_ref(const float* x, int n, float* max, float* log_sum);
void log_softmax_top_k_f32_ref(const float* x, int n, int k, float* values, int32_t* indices, int* count);
void scaled_exp_f32_ref(const float* x, int n, float shift, float scale, float offset, float* y, bool accumulate);
void embed_f32_ref(const float* table_packed, int C, int id, float scale, const float* position, float* y);
void attention_f32_ref(const float* q, size_t q_stride, const float* k, const float* v, size_t kv_stride, float* out,
                       size_t out_stride, int Tq, int Tk, int dh, float scale, int causal_offset, float* scratch);

void quantize_rows_u8_ref(const float* A, size_t lda, int M, int K, uint8_t* Aq, size_t ldq, float* scales,
                          int32_t* zeros, float static_scale, int32_t static_zero);
void gemm_u8s8_ref(const uint8_t* Aq, size_t lda, const int8_t* Wp, const int32_t* w_sum, const float* w_scale,
                   const float* a_scale, const int32_t* a_zero, const float* bias, const float* residual, size_t ldr,
                   float* C, size_t ldc, int M, int N, int K, int n_begin, int n_end, Activation act);
void embed_i8_ref(const int8_t* table_packed, const float* row_scales, int C, int id, float scale,
                  const float* position, float* y);

// GELU with the exact erf form (Hendrycks & Gimpel 2016), as the SIMD kernels compute it.
float gelu_f32_ref(float x);

}  // namespace mt
