// Linear layers and matrix products on the device. With y = a op(b):
//   da += dy op(b)^T,  d op(b) += a^T dy,  dbias += column sums of dy,
// every product one cuBLAS call accumulating (beta = 1) into the gradient.
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/gemm.hpp"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

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

// op: in = {a, b, bias}, i = {M, N, K, trans_b}
void matmul_backward(Graph& g, const Op& op) {
  const int M = int(op.i[0]), N = int(op.i[1]), K = int(op.i[2]);
  const bool trans_b = op.i[3] != 0;
  matmul_grads(g, op.in[0]->value, grad_or_null(op.in[0]), op.in[1]->value, grad_or_null(op.in[1]), op.out->grad, M, N,
               K, trans_b);
  if (float* db = grad_or_null(op.in[2])) {
    column_sum_kernel<<<blocks_for(N), kThreads, 0, g.stream()>>>(db, op.out->grad, M, N);
    MT_GPU_LAUNCHED();
  }
}

Tensor* matmul_impl(Graph& g, Tensor* a, Tensor* b, Tensor* bias, bool trans_b, Shape out_shape, int M, int N, int K) {
  const bool rg = a->requires_grad || b->requires_grad || (bias && bias->requires_grad);
  Tensor* y = g.make(out_shape, rg);
  if (bias) {
    broadcast_rows_kernel<<<blocks_for(int64_t(M) * N), kThreads, 0, g.stream()>>>(y->value, bias->value, M, N);
    MT_GPU_LAUNCHED();
  }
  gemm(g, false, trans_b, M, N, K, a->value, K, b->value, trans_b ? K : N, y->value, N, bias ? 1.0f : 0.0f);
  if (rg) {
    Op& op = g.record(&matmul_backward, y);
    op.in = {a, b, bias, nullptr};
    op.i[0] = M, op.i[1] = N, op.i[2] = K, op.i[3] = trans_b;
  }
  return y;
}

// op: in = {a, b}, i = {Bt, M, N, K, trans_b}: one GEMM set per item.
void batched_matmul_backward(Graph& g, const Op& op) {
  const int Bt = int(op.i[0]), M = int(op.i[1]), N = int(op.i[2]), K = int(op.i[3]);
  const bool trans_b = op.i[4] != 0;
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
  MT_AG_CHECK(w->shape.rank == 2, "linear: weight must be [out, in], not " + w->shape.str());
  const int N = w->shape[0], K = w->shape[1];
  MT_AG_CHECK(x->cols() == K, "linear: input " + x->shape.str() + " does not match weight " + w->shape.str());
  MT_AG_CHECK(!b || (b->numel() == N), "linear: bias " + (b ? b->shape.str() : "") + " for " + w->shape.str());
  Shape out = x->shape;
  out.dims[out.rank - 1] = N;
  return matmul_impl(g, x, w, b, true, out, int(x->rows()), N, K);
}

Tensor* matmul(Graph& g, Tensor* a, Tensor* b, bool trans_b) {
  MT_AG_CHECK(a->shape.rank == 2 && b->shape.rank == 2, "matmul: operands must be matrices");
  const int M = a->shape[0], K = a->shape[1];
  const int N = trans_b ? b->shape[0] : b->shape[1];
  MT_AG_CHECK((trans_b ? b->shape[1] : b->shape[0]) == K,
              "matmul: " + a->shape.str() + " by " + b->shape.str() + (trans_b ? "^T" : ""));
  return matmul_impl(g, a, b, nullptr, trans_b, Shape{M, N}, M, N, K);
}

Tensor* batched_matmul(Graph& g, Tensor* a, Tensor* b, bool trans_b) {
  MT_AG_CHECK(a->shape.rank == 3 && b->shape.rank == 3 && a->shape[0] == b->shape[0],
              "batched_matmul: operands must be [Bt, ., .] with the same Bt");
  const int Bt = a->shape[0], M = a->shape[1], K = a->shape[2];
  const int N = trans_b ? b->shape[1] : b->shape[2];
  MT_AG_CHECK((trans_b ? b->shape[2] : b->shape[1]) == K,
              "batched_matmul: " + a->shape.str() + " by " + b->shape.str() + (trans_b ? "^T" : ""));
  const bool rg = a->requires_grad || b->requires_grad;
  Tensor* y = g.make(Shape{Bt, M, N}, rg);
  for (int t = 0; t < Bt; ++t) {
    gemm(g, false, trans_b, M, N, K, a->value + size_t(t) * M * K, K, b->value + size_t(t) * K * N, trans_b ? K : N,
         y->value + size_t(t) * M * N, N, 0.0f);
  }
  if (rg) {
    Op& op = g.record(&batched_matmul_backward, y);
    op.in = {a, b, nullptr, nullptr};
    op.i[0] = Bt, op.i[1] = M, op.i[2] = N, op.i[3] = K, op.i[4] = trans_b;
  }
  return y;
}

}  // namespace mt::autograd::gpu
