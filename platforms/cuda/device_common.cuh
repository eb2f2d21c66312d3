// Device helpers shared by every CUDA kernel, the runtime's (platforms/cuda)
// and the trainer's (trainer/cuda): launch sizes, warp and block reductions,
// the launch status, and GELU and swish as the CPU references compute them.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

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

// Block size of the trainer's elementwise and row kernels, and the grid for n
// elements (capped; the kernels loop with MT_GPU_FOR).
inline constexpr int kElementThreads = 256;

inline unsigned blocks_for(int64_t n, int threads = kElementThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

// Sum (or max) of v over the block, the warps' results combined one after
// another in warp order (the trainer's reductions; block_reduce combines
// them by a butterfly instead). Every thread gets the result. shared: 32
// values of scratch. blockDim.x a multiple of 32, at most 1024.
template <class T>
__device__ T block_sum(T v, T* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // shared may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) total += shared[w];  // same order in every thread
  return total;
}

__device__ inline float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  float m = shared[0];
  for (int w = 1; w < warps; ++w) m = fmaxf(m, shared[w]);
  return m;
}

// Grid-stride loop over [0, n).
#define MT_GPU_FOR(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// GELU with the exact erf form, as gelu_f32_ref.
__device__ inline float gelu(float x) { return 0.5f * x * (1.0f + erff(x / sqrtf(2.0f))); }

// swish_f32_ref's operations one for one (platforms/ref/activations.cpp),
// with the _rn intrinsics nvcc never contracts into fmas: the CPU's bits.
__device__ inline float exp_f32(float x) {
  x = x < kExpF32Min ? kExpF32Min : x;
  x = x > kExpF32Max ? kExpF32Max : x;
  const float shifted = __fadd_rn(__fmul_rn(x, kLog2E), kRoundShift);
  const float n = __fsub_rn(shifted, kRoundShift);
  float r = __fsub_rn(x, __fmul_rn(n, kLn2Hi));
  r = __fsub_rn(r, __fmul_rn(n, kLn2Lo));
  float p = kExpP0;
  p = __fadd_rn(__fmul_rn(p, r), kExpP1);
  p = __fadd_rn(__fmul_rn(p, r), kExpP2);
  p = __fadd_rn(__fmul_rn(p, r), kExpP3);
  p = __fadd_rn(__fmul_rn(p, r), kExpP4);
  p = __fadd_rn(__fmul_rn(p, r), kExpP5);
  const float y = __fadd_rn(__fadd_rn(__fmul_rn(p, __fmul_rn(r, r)), r), 1.0f);
  const unsigned n_bits = unsigned(__float_as_int(shifted)) - unsigned(__float_as_int(kRoundShift));
  return __fmul_rn(y, __int_as_float(int((n_bits + 127u) << 23)));
}
__device__ inline float swish(float x) { return __fdiv_rn(x, __fadd_rn(1.0f, exp_f32(-x))); }

__device__ inline float activate(float x, Activation act) {
  if (act == Activation::relu) return x > 0.0f ? x : 0.0f;
  if (act == Activation::gelu) return gelu(x);
  if (act == Activation::swish) return swish(x);
  return x;
}

// Status of the launch just made (and clears it).
inline CudaStatus launch_status() { return CudaStatus(cudaGetLastError()); }

inline constexpr CudaStatus kInvalidArgument = CudaStatus(cudaErrorInvalidValue);

}  // namespace mt::cuda_detail
