// What a converted model's search needs on the device, as small kernels that
// a captured decode step can hold: target ids the model must never emit
// (suppressed_ids, masked after the log-softmax as search.cpp does) and the
// forced first tokens of a target prefix, written over the step's picks.
#include "device_common.cuh"

namespace mt {
namespace {

__global__ void mask_columns_kernel(float* x, size_t ld, int M, const int32_t* columns, int count, float value) {
  const size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= size_t(M) * size_t(count)) return;
  const size_t m = i / size_t(count);
  x[m * ld + size_t(columns[i % size_t(count)])] = value;
}

__global__ void fill_i32_kernel(int32_t* x, int n, int32_t value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

}  // namespace

CudaStatus mask_columns_f32_cuda(float* x, size_t ld, int M, const int32_t* columns, int count, float value,
                                 CudaStream stream) {
  if (M < 0 || count < 0 || ld == 0) return cuda_detail::kInvalidArgument;
  const size_t total = size_t(M) * size_t(count);
  if (total == 0) return 0;
  if ((total + 255) / 256 > 2147483647u) return cuda_detail::kInvalidArgument;  // the grid's limit
  mask_columns_kernel<<<unsigned((total + 255) / 256), 256, 0, stream>>>(x, ld, M, columns, count, value);
  return cuda_detail::launch_status();
}

CudaStatus fill_i32_cuda(int32_t* x, int n, int32_t value, CudaStream stream) {
  if (n < 0) return cuda_detail::kInvalidArgument;
  if (n == 0) return 0;
  fill_i32_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, n, value);
  return cuda_detail::launch_status();
}

}  // namespace mt
