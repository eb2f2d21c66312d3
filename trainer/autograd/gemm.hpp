// Matrix products for the ops (internal to autograd): one entry point over
// both operand layouts. T = float runs the platforms GEMM (mt/kernels.h,
// gemm_f32 on packed weights): the right operand is packed into panels at
// each call, since weights change every step, and transposes cost nothing
// more than packing from the other layout. T = double runs plain loops.
#pragma once

#include <cstddef>

#include "autograd/graph.hpp"
#include "mt/activation.hpp"

namespace mt::autograd {

// How B is stored: [N, K] (C = A B^T, the linear layer's W) or [K, N] (C = A B).
enum class BLayout { nk, kn };

// C[M, N] = A[M, K] op(B) + bias[N] (+ C when accumulate), row strides lda,
// ldb, ldc; bias may be null. Split over the pool by panels of output
// columns, as lib/src/transformer/transformer.cpp's linear does.
// col_sums (kn only, may be null): col_sums[n] += B[k, n] for k = 0, 1, ...
// in that order, taken while B is packed: a bias gradient when B is dy, the
// same sums as a loop over dy's rows, without reading dy again.
// act: none or relu (then not with accumulate): C = relu(A op(B) + bias),
// applied by the kernel as it stores C.
template <class T>
void gemm(Graph<T>& g, int M, int N, int K, const T* A, size_t lda, const T* B, size_t ldb, BLayout layout,
          const T* bias, T* C, size_t ldc, bool accumulate, T* col_sums = nullptr, Activation act = Activation::none);

// The same on the calling thread only (for ops already split over the pool).
// pack: gemm_pack_size(N, K) values of scratch (unused for double).
template <class T>
void gemm_serial(const Graph<T>& g, T* pack, int M, int N, int K, const T* A, size_t lda, const T* B, size_t ldb,
                 BLayout layout, const T* bias, T* C, size_t ldc, bool accumulate);
size_t gemm_pack_size(int N, int K);

// For an operand used by many products (float only): B's panels [p0, p1) of
// packed_panels(N) packed in place in `packed` (packed_size(N, K) floats;
// threads may split the panels), then C[M, N] = A op(B) + bias (+ C when
// accumulate) on the calling thread from it: every C[m, n] the same chain
// of fmas as gemm's.
void gemm_pack(const float* B, size_t ldb, BLayout layout, int N, int K, int p0, int p1, float* packed);
void gemm_packed(const KernelTable& kernels, int M, int N, int K, const float* A, size_t lda, const float* packed,
                 const float* bias, float* C, size_t ldc, bool accumulate);

// dst[c, r] = src[r, c]: src [R, Cn] with row stride ld, dst [Cn, R] dense;
// only rows [r0, r1) of src (so threads can split R).
template <class T>
void transpose(const T* src, int R, int Cn, size_t ld, T* dst, int r0, int r1);
template <class T>
void transpose(const T* src, int R, int Cn, size_t ld, T* dst) {
  transpose(src, R, Cn, ld, dst, 0, R);
}

// dst[c, r] += src[r, c]: src [R, Cn] dense, dst [Cn, R] dense; rows [r0, r1) of src.
template <class T>
void add_transposed(const T* src, int R, int Cn, T* dst, int r0, int r1);

}  // namespace mt::autograd
