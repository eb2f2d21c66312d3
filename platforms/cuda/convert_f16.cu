// Activations rounded to half for the fp16 GEMMs: __float2half_rn rounds to
// nearest, ties to even, as the host's f32_to_f16_bits (mt/half.h) that made
// the weights. One block per row; the pad columns of the output are left alone.
#include <cuda_fp16.h>

#include "device_common.cuh"

namespace mt {
namespace {

constexpr int kThreads = 128;

__global__ void convert_rows_f16_kernel(const float* A, size_t lda, int K, uint16_t* H, size_t ldh) {
  const float* a = A + size_t(blockIdx.x) * lda;
  uint16_t* h = H + size_t(blockIdx.x) * ldh;
  for (int k = threadIdx.x; k < K; k += blockDim.x) h[k] = __half_as_ushort(__float2half_rn(a[k]));
}

}  // namespace

CudaStatus convert_rows_f16_cuda(const float* A, size_t lda, int M, int K, uint16_t* H, size_t ldh, CudaStream stream) {
  if (M < 0 || K < 0 || lda < size_t(K) || ldh < size_t(K)) return cuda_detail::kInvalidArgument;
  if (M == 0 || K == 0) return 0;
  convert_rows_f16_kernel<<<M, kThreads, 0, stream>>>(A, lda, K, H, ldh);
  return cuda_detail::launch_status();
}

}  // namespace mt
