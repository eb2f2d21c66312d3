// Elementwise ops and the sum on the device (formulas in autograd/
// elementwise.cpp): grid-stride kernels; the bias gradient sums rows in
// order per column; the sum reduces in double in one block, as the CPU
// accumulates in double.
#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/launchers.hpp"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::block_sum;
using cuda_detail::blocks_for;
using cuda_detail::kElementThreads;

namespace {

__global__ void add_kernel(float* y, const float* a, const float* b, int64_t n) { MT_GPU_FOR(i, n) y[i] = a[i] + b[i]; }
__global__ void mul_kernel(float* y, const float* a, const float* b, int64_t n) { MT_GPU_FOR(i, n) y[i] = a[i] * b[i]; }
__global__ void scale_kernel(float* y, const float* x, float s, int64_t n) { MT_GPU_FOR(i, n) y[i] = s * x[i]; }
// dx += s dy (s = 1: the add's and add_bias's input gradient).
__global__ void axpy_kernel(float* dx, const float* dy, float s, int64_t n) { MT_GPU_FOR(i, n) dx[i] += s * dy[i]; }
// da += dy * other
__global__ void mul_grad_kernel(float* da, const float* dy, const float* other, int64_t n) {
  MT_GPU_FOR(i, n) da[i] += dy[i] * other[i];
}
__global__ void add_bias_kernel(float* y, const float* x, const float* b, int64_t M, int N) {
  MT_GPU_FOR(i, M * N) y[i] = x[i] + b[i % N];
}
__global__ void bias_grad_kernel(float* db, const float* dy, int64_t M, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float s = 0.0f;
  for (int64_t m = 0; m < M; ++m) s += dy[m * N + n];
  db[n] += s;
}
__global__ void sum_kernel(float* y, const float* x, int64_t n) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += double(x[i]);
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) y[0] = float(acc);
}
// dx += dy[0] everywhere (dy read on the device: no host sync).
__global__ void sum_grad_kernel(float* dx, const float* dy, int64_t n) { MT_GPU_FOR(i, n) dx[i] += dy[0]; }
__global__ void add_scalar_kernel(float* x, float v) { x[0] += v; }

bool needs(Tensor* t) { return t && t->requires_grad; }

void axpy(Graph& g, float* dx, const float* dy, float s, int64_t n) {
  if (n == 0) return;
  axpy_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(dx, dy, s, n);
  MT_GPU_LAUNCHED();
}

void add_backward(Graph& g, const Op& op) {
  for (Tensor* x : {op.in[0], op.in[1]})
    if (needs(x)) axpy(g, x->grad, op.out->grad, 1.0f, op.out->numel());
}

void add_bias_backward(Graph& g, const Op& op) {
  const int N = op.out->cols();
  if (needs(op.in[0])) axpy(g, op.in[0]->grad, op.out->grad, 1.0f, op.out->numel());
  if (needs(op.in[1]) && N > 0) {
    bias_grad_kernel<<<blocks_for(N), kElementThreads, 0, g.stream()>>>(op.in[1]->grad, op.out->grad, op.out->rows(),
                                                                        N);
    MT_GPU_LAUNCHED();
  }
}

void mul_backward(Graph& g, const Op& op) {
  const int64_t n = op.out->numel();
  if (n == 0) return;
  if (needs(op.in[0]))
    mul_grad_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(op.in[0]->grad, op.out->grad, op.in[1]->value,
                                                                       n);
  if (needs(op.in[1]))
    mul_grad_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(op.in[1]->grad, op.out->grad, op.in[0]->value,
                                                                       n);
  MT_GPU_LAUNCHED();
}

void scale_backward(Graph& g, const Op& op) {
  axpy(g, op.in[0]->grad, op.out->grad, float(std::get<ScaleArgs>(op.args).factor), op.out->numel());
}

void sum_backward(Graph& g, const Op& op) {
  const int64_t n = op.in[0]->numel();
  if (n == 0) return;
  sum_grad_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(op.in[0]->grad, op.out->grad, n);
  MT_GPU_LAUNCHED();
}

void check_same(const char* what, Tensor* a, Tensor* b) {
  MT_AG_CHECK(a->shape == b->shape, std::string(what) + ": shapes " + a->shape.str() + " and " + b->shape.str());
}

}  // namespace

void add_scalar(float* x, float v, Stream s) {
  add_scalar_kernel<<<1, 1, 0, s>>>(x, v);
  MT_GPU_LAUNCHED();
}

Tensor* add(Graph& g, Tensor* a, Tensor* b) {
  check_same("add", a, b);
  Tensor* y = g.make(a->shape, a->requires_grad || b->requires_grad);
  const int64_t n = y->numel();
  if (n > 0) {
    add_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(y->value, a->value, b->value, n);
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) g.record(&add_backward, y).in = {a, b, nullptr, nullptr};
  return y;
}

Tensor* add_bias(Graph& g, Tensor* x, Tensor* b) {
  const int N = x->cols();
  MT_AG_CHECK(b->numel() == N, "add_bias: bias " + b->shape.str() + " for " + x->shape.str());
  Tensor* y = g.make(x->shape, x->requires_grad || b->requires_grad);
  if (x->numel() > 0) {
    add_bias_kernel<<<blocks_for(x->numel()), kElementThreads, 0, g.stream()>>>(y->value, x->value, b->value, x->rows(),
                                                                                N);
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) g.record(&add_bias_backward, y).in = {x, b, nullptr, nullptr};
  return y;
}

Tensor* mul(Graph& g, Tensor* a, Tensor* b) {
  check_same("mul", a, b);
  Tensor* y = g.make(a->shape, a->requires_grad || b->requires_grad);
  const int64_t n = y->numel();
  if (n > 0) {
    mul_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(y->value, a->value, b->value, n);
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) g.record(&mul_backward, y).in = {a, b, nullptr, nullptr};
  return y;
}

Tensor* scale(Graph& g, Tensor* x, double s) {
  Tensor* y = g.make(x->shape, x->requires_grad);
  const int64_t n = y->numel();
  if (n > 0) {
    scale_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(y->value, x->value, float(s), n);
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) {
    Op& op = g.record(&scale_backward, y);
    op.in[0] = x;
    op.args = ScaleArgs{s};
  }
  return y;
}

Tensor* sum(Graph& g, Tensor* x) {
  Tensor* y = g.make(Shape{1}, x->requires_grad);
  sum_kernel<<<1, 1024, 0, g.stream()>>>(y->value, x->value, x->numel());
  MT_GPU_LAUNCHED();
  if (y->requires_grad) g.record(&sum_backward, y).in[0] = x;
  return y;
}

}  // namespace mt::autograd::gpu
