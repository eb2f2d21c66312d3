// Device helpers shared by the CUDA kernels: warp and block reductions, the
// launch status, and GELU as the CPU reference computes it.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

#include "mt/cuda_kernels.h"

namespace mt::cuda_detail {

inline constexpr unsigned kFullMask = 0xffffffffu;

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Butterfly reduction: every lane ends with the result, and the order of the
// additions is fixed, so results do not vary from run to run.
template <class Op>
__device__ inline float warp_reduce(float v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Reduction over the block (blockDim.x a multiple of 32); every thread gets the
// result. scratch holds 32 floats; the leading barrier lets calls reuse it.
template <class Op>
__device__ inline float block_reduce(float v, Op op, float identity, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_reduce(v, op);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  return warp_reduce(lane < warps ? scratch[lane] : identity, op);
}

// GELU with the exact erf form, as gelu_f32_ref.
__device__ inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x / sqrtf(2.0f))); }

__device__ inline float activate(float x, Activation act) {
  if (act == Activation::relu) return x > 0.0f ? x : 0.0f;
  if (act == Activation::gelu) return gelu(x);
  return x;
}

// Status of the launch just made (and clears it).
inline CudaStatus launch_status() { return CudaStatus(cudaGetLastError()); }

inline constexpr CudaStatus kInvalidArgument = CudaStatus(cudaErrorInvalidValue);

}  // namespace mt::cuda_detail
