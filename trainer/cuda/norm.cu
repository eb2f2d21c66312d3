// LayerNorm on the device, the CPU's formulas (autograd/norm.cpp): one block
// per row for the forward and dx; one thread per column for dgamma and dbeta
// (summed over rows in order, as the CPU).
#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::block_sum;
using cuda_detail::blocks_for;
using cuda_detail::kElementThreads;

namespace {

// Two passes, as the CPU: accurate when |mean| >> stddev.
__global__ void layer_norm_forward_kernel(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                                          const float* beta, int C, float eps) {
  __shared__ float shared[32];
  const int64_t m = blockIdx.x;
  const float* xr = x + m * C;
  float s = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) s += xr[c];
  const float mu = block_sum(s, shared) / float(C);
  float sq = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) sq += (xr[c] - mu) * (xr[c] - mu);
  const float r = 1.0f / sqrtf(block_sum(sq, shared) / float(C) + eps);
  for (int c = threadIdx.x; c < C; c += blockDim.x) y[m * C + c] = (xr[c] - mu) * r * gamma[c] + beta[c];
  if (threadIdx.x == 0) mean[m] = mu, rstd[m] = r;
}

// dx += rstd (dn - mean(dn) - xhat mean(dn xhat)), dn = dy gamma.
__global__ void layer_norm_dx_kernel(float* dx, const float* dy, const float* x, const float* gamma, const float* mean,
                                     const float* rstd, int C) {
  __shared__ float shared[32];
  const int64_t m = blockIdx.x;
  const float* xr = x + m * C;
  const float* dyr = dy + m * C;
  float a = 0.0f, b = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float xhat = (xr[c] - mean[m]) * rstd[m];
    const float dn = dyr[c] * gamma[c];
    a += dn;
    b += dn * xhat;
  }
  const float dn_mean = block_sum(a, shared) / float(C);
  const float dn_xhat_mean = block_sum(b, shared) / float(C);
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float xhat = (xr[c] - mean[m]) * rstd[m];
    const float dn = dyr[c] * gamma[c];
    dx[m * C + c] += rstd[m] * (dn - dn_mean - xhat * dn_xhat_mean);
  }
}

// dgamma[c] += sum_m dy xhat, dbeta[c] += sum_m dy (either may be null).
__global__ void layer_norm_params_kernel(float* dgamma, float* dbeta, const float* dy, const float* x,
                                         const float* mean, const float* rstd, int64_t M, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float sg = 0.0f, sb = 0.0f;
  for (int64_t m = 0; m < M; ++m) {
    const float d = dy[m * C + c];
    sg += d * (x[m * C + c] - mean[m]) * rstd[m];
    sb += d;
  }
  if (dgamma) dgamma[c] += sg;
  if (dbeta) dbeta[c] += sb;
}

// op: in = {x, gamma, beta}, saved = {mean [M], rstd [M]}
void layer_norm_backward(Graph& g, const Op& op) {
  Tensor* x = op.in[0];
  Tensor* gamma = op.in[1];
  Tensor* beta = op.in[2];
  const int64_t M = x->rows();
  const int C = x->cols();
  if (M == 0) return;
  if (x->requires_grad) {
    layer_norm_dx_kernel<<<unsigned(M), kElementThreads, 0, g.stream()>>>(x->grad, op.out->grad, x->value, gamma->value,
                                                                          op.saved[0]->value, op.saved[1]->value, C);
    MT_GPU_LAUNCHED();
  }
  if (gamma->requires_grad || beta->requires_grad) {
    layer_norm_params_kernel<<<blocks_for(C), kElementThreads, 0, g.stream()>>>(
        gamma->requires_grad ? gamma->grad : nullptr, beta->requires_grad ? beta->grad : nullptr, op.out->grad,
        x->value, op.saved[0]->value, op.saved[1]->value, M, C);
    MT_GPU_LAUNCHED();
  }
}

}  // namespace

Tensor* layer_norm(Graph& g, Tensor* x, Tensor* gamma, Tensor* beta, double eps) {
  const int C = x->cols();
  const int64_t M = x->rows();
  MT_AG_CHECK(gamma->numel() == C && beta->numel() == C,
              "layer_norm: gamma/beta " + gamma->shape.str() + " for input " + x->shape.str());
  const bool rg = x->requires_grad || gamma->requires_grad || beta->requires_grad;
  Tensor* y = g.make(x->shape, rg);
  Tensor* mean = g.make(Shape{int(M)}, false);
  Tensor* rstd = g.make(Shape{int(M)}, false);
  if (M > 0) {
    layer_norm_forward_kernel<<<unsigned(M), kElementThreads, 0, g.stream()>>>(
        y->value, mean->value, rstd->value, x->value, gamma->value, beta->value, C, float(eps));
    MT_GPU_LAUNCHED();
  }
  if (rg) {
    Op& op = g.record(&layer_norm_backward, y);
    op.in = {x, gamma, beta, nullptr};
    op.saved = {mean, rstd, nullptr};
  }
  return y;
}

}  // namespace mt::autograd::gpu
