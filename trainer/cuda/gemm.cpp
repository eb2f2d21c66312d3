// cuBLAS is column-major: a row-major X with stride ld is the column-major
// X^T with the same ld. So C = op(A) op(B) row-major is computed as the
// column-major C^T = op(B)^T op(A)^T, with A and B swapped and each
// transpose flag carried over unchanged.
#include "cuda/gemm.hpp"

#include "cublas_library.hpp"
#include "cuda/cuda_check.hpp"

namespace mt::autograd::gpu {

void gemm(Graph& g, bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
          float* C, int ldc, float beta) {
  if (M <= 0 || N <= 0) return;
  const cuda_detail::CublasLibrary* lib = cuda_detail::cublas_library();
  cublasHandle_t h = g.cublas();
  const float alpha = 1.0f;
  // Exact fp32 (CUBLAS_COMPUTE_32F, no TF32): the CUDA tests compare with the CPU at 1e-4.
  const cublasStatus_t s = lib->gemm_ex(h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N,
                                        M, K, &alpha, B, CUDA_R_32F, ldb, A, CUDA_R_32F, lda, &beta, C, CUDA_R_32F, ldc,
                                        CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) device_fail("cublasGemmEx", lib->status_string(s));
}

}  // namespace mt::autograd::gpu
