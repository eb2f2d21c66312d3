// Row-major fp32 matrix products on the graph's stream through cuBLAS
// (opened by platforms/cuda/cublas_library at first use).
#pragma once

#include "cuda/device_graph.hpp"

namespace mt::autograd::gpu {

// C[M, N] = op(A)[M, K] op(B)[K, N] + beta C, row-major with row strides
// lda, ldb, ldc. op(A) = A^T when trans_a (A stored [K, M]); op(B) = B^T
// when trans_b (B stored [N, K]). beta is 0 or 1 (accumulate).
void gemm(Graph& g, bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
          float* C, int ldc, float beta);

}  // namespace mt::autograd::gpu
