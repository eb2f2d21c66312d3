// Row softmax and log-softmax, one block per row: the maximum, the sum of
// exp(x - max) (subtracting the maximum keeps exp() from overflowing), then
// the outputs, with the operations of softmax_f32_ref / log_softmax_f32_ref.
#include "device_common.cuh"

namespace mt {
namespace {

using cuda_detail::block_reduce;
using cuda_detail::MaxOp;
using cuda_detail::SumOp;

struct RowStats {
  float max, sum;  // max of the row, sum of exp(x - max)
};

__device__ RowStats row_stats(const float* x, int N, float* scratch) {
  float m = -INFINITY;
  for (int i = threadIdx.x; i < N; i += blockDim.x) m = fmaxf(m, x[i]);
  m = block_reduce(m, MaxOp{}, -INFINITY, scratch);
  float sum = 0.0f;
  for (int i = threadIdx.x; i < N; i += blockDim.x) sum += expf(x[i] - m);
  return {m, block_reduce(sum, SumOp{}, 0.0f, scratch)};
}

// Each thread writes only elements it read itself: y may alias x.
__global__ void softmax_kernel(const float* x, float* y, int N) {
  __shared__ float scratch[32];
  const float* xr = x + size_t(blockIdx.x) * N;
  float* yr = y + size_t(blockIdx.x) * N;
  const RowStats s = row_stats(xr, N, scratch);
  for (int i = threadIdx.x; i < N; i += blockDim.x) yr[i] = expf(xr[i] - s.max) / s.sum;
}

__global__ void log_softmax_kernel(const float* x, float* y, float* lse, int N) {
  __shared__ float scratch[32];
  const float* xr = x + size_t(blockIdx.x) * N;
  float* yr = y + size_t(blockIdx.x) * N;
  const RowStats s = row_stats(xr, N, scratch);
  const float log_sum = logf(s.sum);
  for (int i = threadIdx.x; i < N; i += blockDim.x) yr[i] = xr[i] - s.max - log_sum;
  if (lse && threadIdx.x == 0) lse[blockIdx.x] = s.max + log_sum;
}

int threads_for(int N) { return N >= 8192 ? 512 : N > 1024 ? 256 : 128; }

}  // namespace

CudaStatus softmax_f32_cuda(const float* x, float* y, int M, int N, CudaStream stream) {
  if (M < 0 || N < 0) return cuda_detail::kInvalidArgument;
  if (M == 0 || N == 0) return 0;
  softmax_kernel<<<M, threads_for(N), 0, stream>>>(x, y, N);
  return cuda_detail::launch_status();
}

CudaStatus log_softmax_f32_cuda(const float* x, float* y, float* lse, int M, int N, CudaStream stream) {
  if (M < 0 || N < 0) return cuda_detail::kInvalidArgument;
  if (M == 0 || N == 0) return 0;
  log_softmax_kernel<<<M, threads_for(N), 0, stream>>>(x, y, lse, N);
  return cuda_detail::launch_status();
}

}  // namespace mt
