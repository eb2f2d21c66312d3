// Dropout on the device with the CPU's counter-based generator (autograd/
// dropout.cpp: SplitMix64 of (seed, stream, element)), so for the same
// RngState the masks are the CPU's exactly, bit for bit.
#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::blocks_for;
using cuda_detail::kElementThreads;

namespace {

__host__ __device__ inline uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// key = splitmix64(seed ^ splitmix64(stream)), computed once on the host.
__global__ void dropout_kernel(float* y, float* mask, const float* x, uint64_t key, double p, float keep_scale,
                               int64_t n) {
  MT_GPU_FOR(i, n) {
    const double u = double(splitmix64(key + uint64_t(i)) >> 11) * 0x1.0p-53;
    const float m = u < p ? 0.0f : keep_scale;
    mask[i] = m;
    y[i] = x[i] * m;
  }
}

__global__ void dropout_grad_kernel(float* dx, const float* dy, const float* mask, int64_t n) {
  MT_GPU_FOR(i, n) dx[i] += dy[i] * mask[i];
}

void dropout_backward(Graph& g, const Op& op) {
  const int64_t n = op.out->numel();
  if (n == 0) return;
  dropout_grad_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(op.in[0]->grad, op.out->grad,
                                                                         op.saved[0]->value, n);
  MT_GPU_LAUNCHED();
}

}  // namespace

Tensor* dropout(Graph& g, Tensor* x, double p) {
  MT_AG_CHECK(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1)");
  if (p == 0.0 || !g.training()) return x;
  const uint64_t seed = g.rng_state().seed;
  const uint64_t stream = g.next_dropout_stream();
  Tensor* y = g.make(x->shape, x->requires_grad);
  Tensor* mask = g.make(x->shape, false);
  const int64_t n = x->numel();
  if (n > 0) {
    dropout_kernel<<<blocks_for(n), kElementThreads, 0, g.stream()>>>(
        y->value, mask->value, x->value, splitmix64(seed ^ splitmix64(stream)), p, float(1.0 / (1.0 - p)), n);
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) {
    Op& op = g.record(&dropout_backward, y);
    op.in[0] = x;
    op.saved[0] = mask;
  }
  return y;
}

}  // namespace mt::autograd::gpu
