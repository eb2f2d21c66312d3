// One column of a row-major matrix set to a value: the search forbids a token
// (EOS before the minimum length) by setting its logit to -inf in every row.
#include "device_common.cuh"

namespace mt {
namespace {

__global__ void set_column_kernel(float* x, size_t ld, int M, int column, float value) {
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m < M) x[size_t(m) * ld + column] = value;
}

}  // namespace

CudaStatus set_column_f32_cuda(float* x, size_t ld, int M, int column, float value, CudaStream stream) {
  if (M < 0 || column < 0 || size_t(column) >= ld) return cuda_detail::kInvalidArgument;
  if (M == 0) return 0;
  set_column_kernel<<<(M + 255) / 256, 256, 0, stream>>>(x, ld, M, column, value);
  return cuda_detail::launch_status();
}

}  // namespace mt
