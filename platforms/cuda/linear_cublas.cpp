// Linear layers on the GPU: cuBLAS computes A W^T, our epilogue kernel adds
// bias, activation and residual. cuBLAS is column-major, so the row-major
// C[M, N] = A[M, K] W[N, K]^T is computed as its transpose C^T = W A^T: W read
// as a column-major [K, N] matrix and transposed, A read as [K, M]. int8
// layers take the same route in s8 x s8 -> s32, with our kernels quantizing
// before and dequantizing after (quantize_i8.cu); fp16 layers in 16F x 16F
// with fp32 sums, after rounding A to half (convert_f16.cu).
#include <cuda_runtime.h>

#include "cublas_library.hpp"

#include "mt/cuda_kernels.h"

namespace mt {

struct CublasContext {
  cublasHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // cublasSetStream resets the workspace to cuBLAS's own pool, so both are
  // set again only when the stream changes.
  cudaStream_t stream = nullptr;
  bool stream_set = false;
};

CublasContext* cublas_create(size_t workspace_bytes) {
  const cuda_detail::CublasLibrary* cublas = cuda_detail::cublas_library();
  if (cublas == nullptr) return nullptr;  // libcublas not found
  auto* context = new CublasContext;
  if (cublas->create(&context->handle) != CUBLAS_STATUS_SUCCESS ||
      (workspace_bytes > 0 && cudaMalloc(&context->workspace, workspace_bytes) != cudaSuccess)) {
    cublas_destroy(context);
    return nullptr;
  }
  context->workspace_bytes = workspace_bytes;
  return context;
}

void cublas_destroy(CublasContext* context) {
  if (context == nullptr) return;
  if (context->handle != nullptr) cuda_detail::cublas_library()->destroy(context->handle);
  if (context->workspace != nullptr) cudaFree(context->workspace);
  delete context;
}

namespace {

CudaStatus from_cublas(cublasStatus_t status) {
  return status == CUBLAS_STATUS_SUCCESS ? 0 : kCublasStatusBase + int(status);
}

CudaStatus use_stream(CublasContext* context, cudaStream_t stream) {
  if (context->stream_set && context->stream == stream) return 0;
  const cuda_detail::CublasLibrary* cublas = cuda_detail::cublas_library();
  cublasStatus_t status = cublas->set_stream(context->handle, stream);
  if (status == CUBLAS_STATUS_SUCCESS && context->workspace != nullptr)
    status = cublas->set_workspace(context->handle, context->workspace, context->workspace_bytes);
  if (status != CUBLAS_STATUS_SUCCESS) return from_cublas(status);
  context->stream = stream;
  context->stream_set = true;
  return 0;
}

// The floating-point layers' product and epilogue: C = act(A W^T + bias) +
// residual with A [M, K] and W [N, K] of `type`, fp32 C. Arguments checked.
struct FloatOperands {
  const void* A;
  size_t lda;
  const void* W;
  size_t ldw;
  cudaDataType_t type;
  cublasComputeType_t compute;
};

bool valid_linear(CublasContext* context, int M, int N, int K, size_t lda, size_t ldw, size_t ldc) {
  return context != nullptr && M >= 0 && N >= 0 && K >= 0 && lda >= size_t(K) && ldw >= size_t(K) && ldc >= size_t(N);
}

// Accumulating onto C in place is only right when nothing comes between the
// product and the residual.
bool accumulates(const float* residual, size_t ldr, const float* C, size_t ldc, Activation act, bool* invalid) {
  const bool accumulate = residual != nullptr && residual == C;
  *invalid = accumulate && (ldr != ldc || act != Activation::none);
  return accumulate;
}

CudaStatus product_and_epilogue(CublasContext* context, const FloatOperands& x, const float* bias,
                                const float* residual, size_t ldr, float* C, size_t ldc, int M, int N, int K,
                                Activation act, bool accumulate, CudaStream stream) {
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  const cublasStatus_t status = cuda_detail::cublas_library()->gemm_ex(
      context->handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, x.W, x.type, int(x.ldw), x.A, x.type, int(x.lda),
      &beta, C, CUDA_R_32F, int(ldc), x.compute, CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) return from_cublas(status);
  return bias_act_residual_f32_cuda(C, ldc, bias, act, accumulate ? nullptr : residual, ldr, M, N, stream);
}

}  // namespace

CudaStatus linear_f32_cuda(CublasContext* context, const float* A, size_t lda, const float* W, size_t ldw,
                           const float* bias, const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                           int K, Activation act, GemmMath math, CudaStream stream) {
  bool invalid = false;
  const bool accumulate = accumulates(residual, ldr, C, ldc, act, &invalid);
  if (!valid_linear(context, M, N, K, lda, ldw, ldc) || invalid) return CudaStatus(cudaErrorInvalidValue);
  if (M == 0 || N == 0) return 0;
  if (CudaStatus s = use_stream(context, stream)) return s;
  const cublasComputeType_t compute = math == GemmMath::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  return product_and_epilogue(context, {A, lda, W, ldw, CUDA_R_32F, compute}, bias, residual, ldr, C, ldc, M, N, K, act,
                              accumulate, stream);
}

CudaStatus linear_f16_cuda(CublasContext* context, const float* A, size_t lda, const uint16_t* W, size_t ldw,
                           const float* bias, const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                           int K, Activation act, uint16_t* a16, size_t ld_a16, CudaStream stream) {
  bool invalid = false;
  const bool accumulate = accumulates(residual, ldr, C, ldc, act, &invalid);
  if (!valid_linear(context, M, N, K, lda, ldw, ldc) || ld_a16 < size_t(K) || invalid)
    return CudaStatus(cudaErrorInvalidValue);
  if (M == 0 || N == 0) return 0;
  if (CudaStatus s = use_stream(context, stream)) return s;
  if (CudaStatus s = convert_rows_f16_cuda(A, lda, M, K, a16, ld_a16, stream)) return s;
  // Half operands, fp32 sums: the products are exact.
  return product_and_epilogue(context, {a16, ld_a16, W, ldw, CUDA_R_16F, CUBLAS_COMPUTE_32F}, bias, residual, ldr, C,
                              ldc, M, N, K, act, accumulate, stream);
}

CudaStatus linear_i8_cuda(CublasContext* context, const float* A, size_t lda, const CudaInt8Weights& W,
                          const float* bias, const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                          int K, Activation act, const CudaInt8Scratch& scratch, CudaStream stream) {
  const CudaStatus invalid = CudaStatus(cudaErrorInvalidValue);
  const size_t Kp = size_t(padded_k_i8(K));
  if (context == nullptr || M < 0 || N < 0 || K < 0) return invalid;
  const int Np = padded_rows_i8(N);
  // cuBLAS's int8 GEMM: sizes and leading dimensions in multiples of 4.
  if (lda < size_t(K) || W.ld < Kp || W.ld % 4 != 0 || scratch.ldq < Kp || scratch.ldq % 4 != 0 ||
      scratch.ld_acc < size_t(Np) || scratch.ld_acc % 4 != 0 || ldc < size_t(N))
    return invalid;
  if (M == 0 || N == 0) return 0;
  if (CudaStatus s = use_stream(context, stream)) return s;
  if (CudaStatus s = quantize_rows_s8_cuda(A, lda, M, K, scratch.q, scratch.ldq, scratch.scales, scratch.zeros,
                                           W.input_scale, W.input_zero, stream))
    return s;
  // Integer sums of all Np weight rows (the padding's are 0 and never read):
  // alpha and beta are int32 with CUBLAS_COMPUTE_32I.
  const int32_t alpha = 1, beta = 0;
  const cublasStatus_t status = cuda_detail::cublas_library()->gemm_ex(
      context->handle, CUBLAS_OP_T, CUBLAS_OP_N, Np, M, int(Kp), &alpha, W.q, CUDA_R_8I, int(W.ld), scratch.q,
      CUDA_R_8I, int(scratch.ldq), &beta, scratch.acc, CUDA_R_32I, int(scratch.ld_acc), CUBLAS_COMPUTE_32I,
      CUBLAS_GEMM_DEFAULT);
  if (status != CUBLAS_STATUS_SUCCESS) return from_cublas(status);
  // Calibrated layers carry their zero point's compensation in the bias.
  const int32_t* a_zero = W.input_scale > 0.0f ? nullptr : scratch.zeros;
  return dequantize_i32_cuda(scratch.acc, scratch.ld_acc, W.row_sums, W.scales, scratch.scales, a_zero, bias, act,
                             residual, ldr, C, ldc, M, N, stream);
}

}  // namespace mt
