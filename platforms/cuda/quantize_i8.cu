// The float halves of an int8 layer on the GPU: quantizing activation rows
// before the GEMM and dequantizing its int32 sums after. Both repeat the CPU
// reference's float operations one for one (platforms/ref/quantize_rows.cpp,
// gemm_u8s8.cpp) with the _rn intrinsics, which nvcc never contracts into
// fmas, so they give the reference's bits.
#include "device_common.cuh"

namespace mt {
namespace {

constexpr int kThreads = 128;

// The reference's min and max: a NaN is skipped (a comparison with it is
// false). Partial results are never NaN or -0, so the order of the
// reduction does not matter.
struct SelectMin {
  __device__ float operator()(float a, float b) const { return b < a ? b : a; }
};
struct SelectMax {
  __device__ float operator()(float a, float b) const { return b > a ? b : a; }
};

// quantize_range_u8: a range [lo, hi] to a scale and zero point.
__device__ void quantize_range(float lo, float hi, float* scale, int32_t* zero) {
  float s = __fdiv_rn(__fsub_rn(hi, lo), 255.0f);
  if (!(s > 0.0f)) s = 1.0f;
  float z = rintf(__fdiv_rn(-lo, s));
  z = z > 0.0f ? z : 0.0f;
  z = z < 255.0f ? z : 255.0f;
  *scale = s;
  *zero = int32_t(z);
}

// One row a block: its range (unless static), then every q.
__global__ void quantize_rows_s8_kernel(const float* A, size_t lda, int K, int Kp, int8_t* Q, size_t ldq, float* scales,
                                        int32_t* zeros, float static_scale, int32_t static_zero) {
  __shared__ float scratch[32];
  const int m = blockIdx.x;
  const float* a = A + size_t(m) * lda;
  int8_t* q = Q + size_t(m) * ldq;
  float scale = static_scale;
  int32_t zero = static_zero;
  if (static_scale <= 0.0f) {
    float lo = 0.0f, hi = 0.0f;
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
      lo = SelectMin{}(lo, a[k]);
      hi = SelectMax{}(hi, a[k]);
    }
    lo = cuda_detail::block_reduce(lo, SelectMin{}, 0.0f, scratch);
    hi = cuda_detail::block_reduce(hi, SelectMax{}, 0.0f, scratch);
    quantize_range(lo, hi, &scale, &zero);
  }
  if (threadIdx.x == 0) {
    scales[m] = scale;
    zeros[m] = zero;
  }
  const float inv_scale = __fdiv_rn(1.0f, scale);
  for (int k = threadIdx.x; k < Kp; k += blockDim.x) {
    int32_t v = 128;  // the pad: 0 once centred (its weights are 0 anyway)
    if (k < K) {
      float x = __fmul_rn(a[k], inv_scale);
      x = x > -512.0f ? x : -512.0f;  // NaN goes to -512, as in the reference
      x = x < 512.0f ? x : 512.0f;
      v = __float2int_rn(x) + zero;
      v = v < 0 ? 0 : v > 255 ? 255 : v;
    }
    q[k] = int8_t(v - 128);
  }
}

__global__ void dequantize_i32_kernel(const int32_t* acc, size_t ld_acc, const int32_t* w_sum, const float* w_scale,
                                      const float* a_scale, const int32_t* a_zero, const float* bias, Activation act,
                                      const float* residual, size_t ldr, float* C, size_t ldc, int M, int N) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  for (int m = blockIdx.y * blockDim.y + threadIdx.y; m < M; m += gridDim.y * blockDim.y) {
    const int32_t zero = a_zero ? a_zero[m] : 0;
    const int32_t centred = acc[size_t(m) * ld_acc + n] + (128 - zero) * w_sum[n];
    const float s = __fmul_rn(a_scale[m], w_scale[n]);
    float x = __fmul_rn(__int2float_rn(centred), s);
    if (bias) x = __fadd_rn(x, bias[n]);
    x = cuda_detail::activate(x, act);
    // Read the residual before writing C: they may alias.
    if (residual) x = __fadd_rn(x, residual[size_t(m) * ldr + n]);
    C[size_t(m) * ldc + n] = x;
  }
}

}  // namespace

CudaStatus quantize_rows_s8_cuda(const float* A, size_t lda, int M, int K, int8_t* Q, size_t ldq, float* scales,
                                 int32_t* zeros, float static_scale, int32_t static_zero, CudaStream stream) {
  const int Kp = padded_k_i8(K);
  if (M < 0 || K < 0 || lda < size_t(K) || ldq < size_t(Kp)) return cuda_detail::kInvalidArgument;
  if (M == 0) return 0;
  quantize_rows_s8_kernel<<<M, kThreads, 0, stream>>>(A, lda, K, Kp, Q, ldq, scales, zeros, static_scale, static_zero);
  return cuda_detail::launch_status();
}

CudaStatus dequantize_i32_cuda(const int32_t* acc, size_t ld_acc, const int32_t* w_sum, const float* w_scale,
                               const float* a_scale, const int32_t* a_zero, const float* bias, Activation act,
                               const float* residual, size_t ldr, float* C, size_t ldc, int M, int N,
                               CudaStream stream) {
  if (M < 0 || N < 0 || ld_acc < size_t(N) || ldc < size_t(N)) return cuda_detail::kInvalidArgument;
  if (M == 0 || N == 0) return 0;
  const dim3 block(32, 8);
  const int row_blocks = (M + 7) / 8 < 65535 ? (M + 7) / 8 : 65535;
  const dim3 grid((N + 31) / 32, row_blocks);
  dequantize_i32_kernel<<<grid, block, 0, stream>>>(acc, ld_acc, w_sum, w_scale, a_scale, a_zero, bias, act, residual,
                                                    ldr, C, ldc, M, N);
  return cuda_detail::launch_status();
}

}  // namespace mt
