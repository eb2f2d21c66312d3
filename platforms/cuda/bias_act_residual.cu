// The GEMM epilogue, in place on cuBLAS's result: c = act(c + bias) + residual,
// the order of gemm_f32_ref. A 2-D grid of 32 x 8 tiles: consecutive threads
// take consecutive columns, so rows are read and written coalesced.
#include "device_common.cuh"

namespace mt {
namespace {

__global__ void bias_act_residual_kernel(float* c, size_t ldc, const float* bias, Activation act, const float* residual,
                                         size_t ldr, int M, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  for (int m = blockIdx.y * blockDim.y + threadIdx.y; m < M; m += gridDim.y * blockDim.y) {
    float v = c[size_t(m) * ldc + n];
    if (bias) v += bias[n];
    v = cuda_detail::activate(v, act);
    if (residual) v += residual[size_t(m) * ldr + n];
    c[size_t(m) * ldc + n] = v;
  }
}

}  // namespace

CudaStatus bias_act_residual_f32_cuda(float* c, size_t ldc, const float* bias, Activation act, const float* residual,
                                      size_t ldr, int M, int N, CudaStream stream) {
  if (M < 0 || N < 0) return cuda_detail::kInvalidArgument;
  if (M == 0 || N == 0) return 0;
  if (bias == nullptr && residual == nullptr && act == Activation::none) return 0;
  const dim3 block(32, 8);
  // Rows beyond the y-grid limit are taken by the loop in the kernel.
  const int row_blocks = (M + 7) / 8 < 65535 ? (M + 7) / 8 : 65535;
  const dim3 grid((N + 31) / 32, row_blocks);
  bias_act_residual_kernel<<<grid, block, 0, stream>>>(c, ldc, bias, act, residual, ldr, M, N);
  return cuda_detail::launch_status();
}

}  // namespace mt
