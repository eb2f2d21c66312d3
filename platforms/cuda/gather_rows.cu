// Row gather for beam search: each new beam takes its parent's KV cache. One
// block per (row, group); consecutive threads copy consecutive floats.
#include "device_common.cuh"

namespace mt {
namespace {

__global__ void gather_rows_kernel(const float* src, float* dst, const int32_t* index, size_t row_stride,
                                   size_t row_floats, size_t group_stride) {
  const int r = blockIdx.x;
  const size_t group = size_t(blockIdx.y) * group_stride;
  const float* from = src + group + size_t(index[r]) * row_stride;
  float* to = dst + group + size_t(r) * row_stride;
  for (size_t i = threadIdx.x; i < row_floats; i += blockDim.x) to[i] = from[i];
}

}  // namespace

CudaStatus gather_rows_f32_cuda(const float* src, float* dst, const int32_t* index, int rows, size_t row_stride,
                                size_t row_floats, int groups, size_t group_stride, CudaStream stream) {
  if (rows < 0 || groups < 0 || groups > 65535 || row_floats > row_stride) return cuda_detail::kInvalidArgument;
  if (src == dst && rows > 0) return cuda_detail::kInvalidArgument;  // rows would race each other
  if (rows == 0 || groups == 0 || row_floats == 0) return 0;
  gather_rows_kernel<<<dim3(rows, groups), 256, 0, stream>>>(src, dst, index, row_stride, row_floats, group_stride);
  return cuda_detail::launch_status();
}

}  // namespace mt
