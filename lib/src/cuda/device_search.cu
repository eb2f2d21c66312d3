#include "cuda/device_search.hpp"

#include <cuda_runtime.h>

namespace mt::detail {
namespace {

// One thread a sentence: a step is a sort of at most 2K^2 candidates and
// copies of K histories, too little to split further.
__global__ void advance_beams_kernel(DeviceBeams d, int B, int t, int32_t eos_id, float length_penalty,
                                     const float* top_values, const int32_t* top_tokens) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= B || d.done[b]) return;
  const int K = d.K, T = d.T, width = 2 * K;
  SentenceBeams s;
  s.K = K;
  s.T = T;
  s.scores = d.scores + b * K;
  s.parents = d.parents + b * K;
  s.step_tokens = d.step_tokens + b * K;
  s.history = d.history + size_t(b) * K * T;
  s.scratch = d.scratch + size_t(b) * K * T;
  s.candidates = d.candidates + size_t(b) * width * K;
  s.finished = d.finished + size_t(b) * d.capacity;
  s.finished_tokens = d.finished_tokens + size_t(b) * d.capacity * T;
  s.finished_count = d.finished_counts + b;
  s.length_scales = d.length_scales;
  // The 2K best continuations of each live beam, as the host search gathers them.
  int n = 0;
  for (int k = 0; k < K; ++k) {
    if (s.scores[k] == -INFINITY) continue;
    const size_t row = size_t(b) * K + k;
    for (int i = 0; i < width; ++i) {
      const size_t at = row * width + i;
      if (top_tokens[at] < 0) break;  // the row had fewer candidates
      s.candidates[n++] = {top_values[at] + s.scores[k], top_tokens[at], k, top_values[at]};
    }
  }
  if (advance_sentence(s, n, t, d.length_limits[b], eos_id, length_penalty)) {
    d.done[b] = 1;
    atomicSub(d.alive, 1);
  }
  for (int k = 0; k < K; ++k) d.gather_index[b * K + k] = b * K + s.parents[k];
}

}  // namespace

CudaStatus advance_beams_cuda(const DeviceBeams& beams, int B, int t, int32_t eos_id, float length_penalty,
                              const float* top_values, const int32_t* top_tokens, CudaStream stream) {
  if (B < 0 || beams.K < 1 || 2 * beams.K > kCudaTopKMax || t < 0 || t >= beams.T) {
    return CudaStatus(cudaErrorInvalidValue);
  }
  if (B == 0) return 0;
  constexpr int kThreads = 64;
  advance_beams_kernel<<<(B + kThreads - 1) / kThreads, kThreads, 0, stream>>>(beams, B, t, eos_id, length_penalty,
                                                                               top_values, top_tokens);
  return CudaStatus(cudaGetLastError());
}

}  // namespace mt::detail
