// The end of a decode step, fused into one tiny kernel: the EOS mask before
// the minimum length, then every row's position moved on by one. Positions
// live on the device so that a captured step (a CUDA Graph) can be replayed
// for every t without changing its arguments.
#include "device_common.cuh"

namespace mt {
namespace {

__global__ void decode_step_end_kernel(float* logits, size_t ld, int M, int column, float value,
                                       const int32_t* min_length, int32_t* positions, int32_t* lengths) {
  const int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= M) return;
  if (positions[m] < *min_length) logits[size_t(m) * ld + column] = value;
  positions[m] += 1;
  lengths[m] += 1;
}

}  // namespace

CudaStatus decode_step_end_cuda(float* logits, size_t ld, int M, int column, float value, const int32_t* min_length,
                                int32_t* positions, int32_t* lengths, CudaStream stream) {
  if (M < 0 || column < 0 || size_t(column) >= ld) return cuda_detail::kInvalidArgument;
  if (M == 0) return 0;
  decode_step_end_kernel<<<(M + 255) / 256, 256, 0, stream>>>(logits, ld, M, column, value, min_length, positions,
                                                              lengths);
  return cuda_detail::launch_status();
}

}  // namespace mt
