// Argmax and top-k of each row for greedy and beam search, one block per row.
// Order: larger value first, then lower index, so ties resolve as on the CPU
// (argmax_f32_ref, search.cpp's row_top_k) whatever the thread count.
#include <climits>

#include "device_common.cuh"

namespace mt {
namespace {

using cuda_detail::kFullMask;

constexpr int kThreads = 256;
constexpr int kNone = INT_MAX;  // index of an empty slot while reducing: loses every tie

struct Entry {
  float value;
  int index;
};

__device__ inline bool better(Entry a, Entry b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

__device__ inline Entry warp_best(Entry e) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const Entry o{__shfl_xor_sync(kFullMask, e.value, offset), __shfl_xor_sync(kFullMask, e.index, offset)};
    if (better(o, e)) e = o;
  }
  return e;
}

// The best entry of the block; every thread gets it. scratch holds 32 entries.
__device__ Entry block_best(Entry e, Entry* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  e = warp_best(e);
  __syncthreads();
  if (lane == 0) scratch[warp] = e;
  __syncthreads();
  return warp_best(lane < warps ? scratch[lane] : Entry{-INFINITY, kNone});
}

__global__ void argmax_kernel(const float* x, int N, int32_t* index, float* value) {
  __shared__ Entry scratch[32];
  const float* row = x + size_t(blockIdx.x) * N;
  // Each thread scans increasing indices with a strict >, keeping its first
  // maximum. NaN has no order and is skipped (a row of NaN gives index 0).
  Entry best{-INFINITY, kNone};
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    const float v = row[i];
    if (v == v && (best.index == kNone || v > best.value)) best = {v, i};
  }
  best = block_best(best, scratch);
  if (threadIdx.x == 0) {
    const bool found = best.index != kNone;
    index[blockIdx.x] = found ? best.index : 0;
    if (value) value[blockIdx.x] = found ? best.value : row[0];
  }
}

// Each thread keeps the k best of the elements it scans (i = thread, thread +
// blockDim, ...), sorted; the row's k best are then taken one at a time as the
// best head among those lists. Element i is in the list of thread i % blockDim.
__global__ void top_k_kernel(const float* x, int N, int k, float* values, int32_t* indices) {
  __shared__ Entry scratch[32];
  const float* row = x + size_t(blockIdx.x) * N;
  float list_value[kCudaTopKMax];
  int list_index[kCudaTopKMax];
  int n = 0;
  for (int i = threadIdx.x; i < N; i += blockDim.x) {
    const float v = row[i];
    // Not candidates: -inf (as row_top_k) and NaN (which has no order).
    if (!(v > -INFINITY) || (n == k && !(v > list_value[k - 1]))) continue;
    // Strict >: an equal value seen earlier has a lower index and stays first.
    int j = n < k ? n++ : k - 1;
    for (; j > 0 && v > list_value[j - 1]; --j) {
      list_value[j] = list_value[j - 1];
      list_index[j] = list_index[j - 1];
    }
    list_value[j] = v;
    list_index[j] = i;
  }
  int head = 0;
  for (int r = 0; r < k; ++r) {
    const Entry mine = head < n ? Entry{list_value[head], list_index[head]} : Entry{-INFINITY, kNone};
    const Entry best = block_best(mine, scratch);
    const bool found = best.index != kNone;
    if (found && best.index % int(blockDim.x) == int(threadIdx.x)) ++head;
    if (threadIdx.x == 0) {
      values[size_t(blockIdx.x) * k + r] = found ? best.value : -INFINITY;
      indices[size_t(blockIdx.x) * k + r] = found ? best.index : -1;
    }
  }
}

}  // namespace

CudaStatus argmax_f32_cuda(const float* x, int M, int N, int32_t* index, float* value, CudaStream stream) {
  if (M < 0 || N <= 0) return cuda_detail::kInvalidArgument;
  if (M == 0) return 0;
  argmax_kernel<<<M, kThreads, 0, stream>>>(x, N, index, value);
  return cuda_detail::launch_status();
}

CudaStatus top_k_f32_cuda(const float* x, int M, int N, int k, float* values, int32_t* indices, CudaStream stream) {
  if (M < 0 || N < 0 || k < 1 || k > kCudaTopKMax) return cuda_detail::kInvalidArgument;
  if (M == 0) return 0;
  top_k_kernel<<<M, kThreads, 0, stream>>>(x, N, k, values, indices);
  return cuda_detail::launch_status();
}

}  // namespace mt
