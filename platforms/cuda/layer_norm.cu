// LayerNorm (Ba et al. 2016) of each row, optionally of a residual sum, one
// block per row: mean first, then the variance about it (two passes, as
// layer_norm_f32_ref, which stays accurate when |mean| >> stddev).
#include "device_common.cuh"

namespace mt {
namespace {

using cuda_detail::block_reduce;
using cuda_detail::SumOp;

__global__ void layer_norm_kernel(const float* x, const float* residual, float* sum_out, const float* gamma,
                                  const float* beta, float* y, int C, float eps) {
  __shared__ float scratch[32];
  const size_t base = size_t(blockIdx.x) * C;
  const float* xr = x + base;
  const float* rr = residual ? residual + base : nullptr;
  float* sr = sum_out ? sum_out + base : nullptr;
  float* yr = y + base;

  // Pass 1: the sum (stored when asked), and the mean.
  float sum = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float s = rr ? xr[c] + rr[c] : xr[c];
    if (sr) sr[c] = s;
    sum += s;
  }
  const float mean = block_reduce(sum, SumOp{}, 0.0f, scratch) / float(C);

  // Each thread rereads only the elements it wrote itself, so aliasing of
  // sum_out or y with x or residual is safe without further barriers.
  auto value = [&](int c) { return sr ? sr[c] : (rr ? xr[c] + rr[c] : xr[c]); };
  float sq = 0.0f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) {
    const float d = value(c) - mean;
    sq += d * d;
  }
  const float rstd = 1.0f / sqrtf(block_reduce(sq, SumOp{}, 0.0f, scratch) / float(C) + eps);
  for (int c = threadIdx.x; c < C; c += blockDim.x) yr[c] = (value(c) - mean) * rstd * gamma[c] + beta[c];
}

}  // namespace

CudaStatus layer_norm_f32_cuda(const float* x, const float* residual, float* sum_out, const float* gamma,
                               const float* beta, float* y, int M, int C, float eps, CudaStream stream) {
  if (M < 0 || C < 0) return cuda_detail::kInvalidArgument;
  if (M == 0 || C == 0) return 0;
  const int threads = C > 1024 ? 256 : 128;
  layer_norm_kernel<<<M, threads, 0, stream>>>(x, residual, sum_out, gamma, beta, y, C, eps);
  return cuda_detail::launch_status();
}

}  // namespace mt
