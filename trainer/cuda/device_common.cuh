// Helpers shared by the trainer's kernels: launch sizes and block reductions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mt::autograd::gpu {

constexpr int kThreads = 256;  // block size of elementwise and row kernels

inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  const int64_t b = (n + threads - 1) / threads;
  return unsigned(b < 1 ? 1 : (b > 65535 * 16 ? 65535 * 16 : b));
}

// Sum (or max) of v over the block; every thread gets the result. shared:
// 32 values of scratch. blockDim.x a multiple of 32, at most 1024.
template <class T>
__device__ T block_sum(T v, T* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // shared may still be read by a previous reduction
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  T total = 0;
  for (int w = 0; w < warps; ++w) total += shared[w];  // same order in every thread
  return total;
}

__device__ inline float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
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

}  // namespace mt::autograd::gpu
