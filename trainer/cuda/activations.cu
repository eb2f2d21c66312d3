// ReLU, exact GELU and the row softmax on the device (formulas in
// autograd/activations.cpp).
#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::block_max;
using cuda_detail::block_sum;
using cuda_detail::blocks_for;
using cuda_detail::kElementThreads;

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

__global__ void relu_kernel(float* y, const float* x, int64_t n) { MT_GPU_FOR(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
__global__ void relu_grad_kernel(float* dx, const float* dy, const float* x, int64_t n) {
  MT_GPU_FOR(i, n) dx[i] += x[i] > 0.0f ? dy[i] : 0.0f;
}
__global__ void gelu_kernel(float* y, const float* x, int64_t n) {
  MT_GPU_FOR(i, n) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * kInvSqrt2));
}
// dx += dy (Phi(x) + x phi(x))
__global__ void gelu_grad_kernel(float* dx, const float* dy, const float* x, int64_t n) {
  MT_GPU_FOR(i, n) {
    const float cdf = 0.5f * (1.0f + erff(x[i] * kInvSqrt2));
    const float pdf = expf(-0.5f * x[i] * x[i]) * kInvSqrt2Pi;
    dx[i] += dy[i] * (cdf + x[i] * pdf);
  }
}
// swish = x / (1 + e^-x); dx += dy (s + x s (1 - s)), s = sigmoid(x)
__global__ void swish_kernel(float* y, const float* x, int64_t n) { MT_GPU_FOR(i, n) y[i] = x[i] / (1.0f + expf(-x[i])); }
__global__ void swish_grad_kernel(float* dx, const float* dy, const float* x, int64_t n) {
  MT_GPU_FOR(i, n) {
    const float s = 1.0f / (1.0f + expf(-x[i]));
    dx[i] += dy[i] * (s + x[i] * s * (1.0f - s));
  }
}
// One block per row.
__global__ void softmax_kernel(float* y, const float* x, int N) {
  __shared__ float shared[32];
  const float* xr = x + int64_t(blockIdx.x) * N;
  float* yr = y + int64_t(blockIdx.x) * N;
  float mx = -INFINITY;
  for (int n = threadIdx.x; n < N; n += blockDim.x) mx = fmaxf(mx, xr[n]);
  mx = block_max(mx, shared);
  float s = 0.0f;
  for (int n = threadIdx.x; n < N; n += blockDim.x) s += (yr[n] = expf(xr[n] - mx));
  const float inv = 1.0f / block_sum(s, shared);
  for (int n = threadIdx.x; n < N; n += blockDim.x) yr[n] *= inv;
}
// dx += y (dy - sum(dy y)) per row.
__global__ void softmax_grad_kernel(float* dx, const float* dy, const float* y, int N) {
  __shared__ float shared[32];
  const int64_t o = int64_t(blockIdx.x) * N;
  float dot = 0.0f;
  for (int n = threadIdx.x; n < N; n += blockDim.x) dot += dy[o + n] * y[o + n];
  dot = block_sum(dot, shared);
  for (int n = threadIdx.x; n < N; n += blockDim.x) dx[o + n] += y[o + n] * (dy[o + n] - dot);
}

using Unary = void (*)(float*, const float*, int64_t);
using UnaryGrad = void (*)(float*, const float*, const float*, int64_t);

template <UnaryGrad kernel>
void unary_backward(Graph& g, const Op& op) {
  const int64_t n = op.out->numel();
  if (n == 0) return;
  kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(op.in[0]->grad, op.out->grad, op.in[0]->value, n);
  MT_GPU_LAUNCHED();
}

template <Unary kernel, UnaryGrad grad_kernel>
Tensor* unary(Graph& g, Tensor* x) {
  Tensor* y = g.make(x->shape, x->requires_grad);
  const int64_t n = x->numel();
  if (n > 0) {
    kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(y->value, x->value, n);
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) g.record(&unary_backward<grad_kernel>, y).in[0] = x;
  return y;
}

void softmax_backward(Graph& g, const Op& op) {
  if (op.out->numel() == 0) return;
  softmax_grad_kernel<<<unsigned(op.out->rows()), kElementThreads, 0, g.stream()>>>(op.in[0]->grad, op.out->grad,
                                                                                    op.out->value, op.out->cols());
  MT_GPU_LAUNCHED();
}

}  // namespace

Tensor* relu(Graph& g, Tensor* x) { return unary<relu_kernel, relu_grad_kernel>(g, x); }
Tensor* gelu(Graph& g, Tensor* x) { return unary<gelu_kernel, gelu_grad_kernel>(g, x); }
Tensor* swish(Graph& g, Tensor* x) { return unary<swish_kernel, swish_grad_kernel>(g, x); }

Tensor* softmax(Graph& g, Tensor* x) {
  Tensor* y = g.make(x->shape, x->requires_grad);
  if (x->numel() > 0) {
    softmax_kernel<<<unsigned(x->rows()), kElementThreads, 0, g.stream()>>>(y->value, x->value, x->cols());
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) g.record(&softmax_backward, y).in[0] = x;
  return y;
}

}  // namespace mt::autograd::gpu
