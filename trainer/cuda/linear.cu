// Linear layers and matrix products on the device. With y = a op(b):
//   da += dy op(b)^T,  d op(b) += a^T dy,  dbias += column sums of dy,
// every product one cuBLAS call accumulating (beta = 1) into the gradient.
#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/gemm.hpp"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::blocks_for;
using cuda_detail::kElementThreads;

namespace {

// y[m, n] = bias[n]: the GEMM then accumulates onto it.
__global__ void broadcast_rows_kernel(float* y, const float* bias, int64_t M, int N) {
  MT_GPU_FOR(i, M * N) y[i] = bias[i % N];
}

// db[n] += sum over rows of dy[., n], one thread per column, rows in order
// (coalesced across the warp, and the same order as the CPU).
__global__ void column_sum_kernel(float* db, const float* dy, int64_t M, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float s = 0.0f;
  for (int64_t m = 0; m < M; ++m) s += dy[m * N + n];
  db[n] += s;
}

float* grad_or_null(Tensor* t) { return t && t->requires_grad ? t->grad : nullptr; }

// Gradients of y[M, N] = a[M, K] op(b) for one pair of matrices.
void matmul_grads(Graph& g, const float* a, float* da, const float* b, float* db, const float* dy, int M, int N, int K,
                  bool trans_b) {
  if (da) {
    // da[M, K] += dy[M, N] op(b)^T: b [N, K] as stored when trans_b, else b^T of b [K, N].
    gemm(g, false, !trans_b, M, K, N, dy, N, b, trans_b ? K : N, da, K, 1.0f);
  }
  if (db) {
    if (trans_b)
      gemm(g, true, false, N, K, M, dy, N, a, K, db, K, 1.0f);  // db[N, K] += dy^T a
    else
      gemm(g, true, false, K, N, M, a, K, dy, N, db, N, 1.0f);  // db[K, N] += a^T dy
  }
}

// op: in = {a, b, bias}, args = MatmulArgs
void matmul_backward(Graph& g, const Op& op) {
  const MatmulArgs& args = std::get<MatmulArgs>(op.args);
  const int M = args.M, N = args.N, K = args.K;
  const bool trans_b = args.trans_b;
  matmul_grads(g, op.in[0]->value, grad_or_null(op.in[0]), op.in[1]->value, grad_or_null(op.in[1]), op.out->grad, M, N,
               K, trans_b);
  if (float* db = grad_or_null(op.in[2])) {
    column_sum_kernel<<<blocks_for(N), kElementThreads, 0, g.stream()>>>(db, op.out->grad, M, N);
    MT_GPU_LAUNCHED();
  }
}

Tensor* matmul_impl(Graph& g, Tensor* a, Tensor* b, Tensor* bias, const MatmulArgs& args) {
  const int M = args.M, N = args.N, K = args.K;
  const bool trans_b = args.trans_b;
  const bool rg = a->requires_grad || b->requires_grad || (bias && bias->requires_grad);
  Tensor* y = g.make(args.out, rg);
  if (bias) {
    broadcast_rows_kernel<<<blocks_for(int64_t(M) * N), kElementThreads, 0, g.stream()>>>(y->value, bias->value, M, N);
    MT_GPU_LAUNCHED();
  }
  gemm(g, false, trans_b, M, N, K, a->value, K, b->value, trans_b ? K : N, y->value, N, bias ? 1.0f : 0.0f);
  if (rg) {
    Op& op = g.record(&matmul_backward, y);
    op.in = {a, b, bias, nullptr};
    op.args = args;
  }
  return y;
}

// op: in = {a, b}, args = BatchedMatmulArgs: one GEMM set per item.
void batched_matmul_backward(Graph& g, const Op& op) {
  const BatchedMatmulArgs& args = std::get<BatchedMatmulArgs>(op.args);
  const int Bt = args.batch, M = args.M, N = args.N, K = args.K;
  const bool trans_b = args.trans_b;
  float* da = grad_or_null(op.in[0]);
  float* db = grad_or_null(op.in[1]);
  for (int t = 0; t < Bt; ++t) {
    const size_t ao = size_t(t) * M * K, bo = size_t(t) * K * N;
    matmul_grads(g, op.in[0]->value + ao, da ? da + ao : nullptr, op.in[1]->value + bo, db ? db + bo : nullptr,
                 op.out->grad + size_t(t) * M * N, M, N, K, trans_b);
  }
}

}  // namespace

Tensor* linear(Graph& g, Tensor* x, Tensor* w, Tensor* b) {
  return matmul_impl(g, x, w, b, linear_args(x->shape, w->shape, b ? &b->shape : nullptr));
}

Tensor* matmul(Graph& g, Tensor* a, Tensor* b, bool trans_b) {
  return matmul_impl(g, a, b, nullptr, matmul_args(a->shape, b->shape, trans_b));
}

Tensor* batched_matmul(Graph& g, Tensor* a, Tensor* b, bool trans_b) {
  const BatchedMatmulArgs args = batched_matmul_args(a->shape, b->shape, trans_b);
  const int Bt = args.batch, M = args.M, N = args.N, K = args.K;
  const bool rg = a->requires_grad || b->requires_grad;
  Tensor* y = g.make(Shape{Bt, M, N}, rg);
  for (int t = 0; t < Bt; ++t) {
    gemm(g, false, trans_b, M, N, K, a->value + size_t(t) * M * K, K, b->value + size_t(t) * K * N, trans_b ? K : N,
         y->value + size_t(t) * M * N, N, 0.0f);
  }
  if (rg) {
    Op& op = g.record(&batched_matmul_backward, y);
    op.in = {a, b, nullptr, nullptr};
    op.args = args;
  }
  return y;
}

}  // namespace mt::autograd::gpu
