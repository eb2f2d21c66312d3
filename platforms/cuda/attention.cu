// Fused masked attention: one block of kWarps warps per (query tile, head,
// sequence). A warp follows one query over keys 32 at a time, one key per
// lane, with the online softmax (running max and sum, rescaling the partial
// output when the max grows), so scores never leave registers. With fewer
// queries than warps in a tile (decode: one query), the warps of a query split
// its keys and merge their partial results through shared memory at the end.
#include "device_common.cuh"

namespace mt {
namespace {

using cuda_detail::kFullMask;
using cuda_detail::MaxOp;
using cuda_detail::SumOp;
using cuda_detail::warp_reduce;

constexpr int kWarps = 4;
constexpr int kTile = 32;  // keys per step, one per lane
constexpr int kDimsPerLane = kCudaAttentionMaxDh / 32;

struct Rows {
  int first, count;
};

__device__ inline Rows rows_of(const CudaSequenceRows& r, int b) {
  return {r.begin ? r.begin[b] : b * r.stride, r.length ? r.length[b] : r.rows};
}

__global__ void __launch_bounds__(kWarps * 32) attention_kernel(CudaAttention a, int queries_per_block) {
  __shared__ float q_s[kWarps][kCudaAttentionMaxDh];
  __shared__ float o_s[kWarps][kCudaAttentionMaxDh];
  __shared__ float m_s[kWarps], l_s[kWarps];

  const int b = blockIdx.z, h = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const Rows qr = rows_of(a.q_rows, b);
  const int q0 = blockIdx.x * queries_per_block;
  if (q0 >= qr.count) return;  // the whole block: padding past this sequence's queries
  const Rows kr = rows_of(a.kv_rows, b / a.kv_group);
  const int dh = a.dh;
  const size_t col = size_t(h) * dh;

  // Decode step: this block is the only one of (b, h), so it alone writes the
  // head's slice of the new cache row; the barrier makes it visible to all warps.
  // k and v are writable here (attention_f32_cuda's contract), hence the casts.
  if (a.append_k != nullptr) {
    if (kr.count > 0) {
      const float* src_k = a.append_k + size_t(qr.first) * a.append_ld + col;
      const float* src_v = a.append_v + size_t(qr.first) * a.append_ld + col;
      const size_t dst = size_t(kr.first + kr.count - 1) * a.kv_ld + col;
      for (int d = threadIdx.x; d < dh; d += blockDim.x) {
        const_cast<float*>(a.k)[dst + d] = src_k[d];
        const_cast<float*>(a.v)[dst + d] = src_v[d];
      }
    }
    __syncthreads();
  }

  const int splits = kWarps / queries_per_block;
  const int slot = warp % queries_per_block, split = warp / queries_per_block;
  const int i = q0 + slot;
  const bool active = i < qr.count;
  int keys = active ? kr.count : 0;
  if (a.causal_offset >= 0 && i + a.causal_offset + 1 < keys) keys = i + a.causal_offset + 1;

  for (int d = lane; d < dh; d += 32) q_s[warp][d] = active ? a.q[size_t(qr.first + i) * a.q_ld + col + d] : 0.0f;
  __syncwarp();

  const float* k_base = a.k + size_t(kr.first) * a.kv_ld + col;
  const float* v_base = a.v + size_t(kr.first) * a.kv_ld + col;
  float m = -INFINITY, l = 0.0f;  // running max of the scores and sum of exp(score - m)
  float o[kDimsPerLane] = {};     // lane holds dims lane + 32 * c
  for (int t0 = split * kTile; t0 < keys; t0 += splits * kTile) {
    const int j = t0 + lane;
    float s = -INFINITY;
    if (j < keys) {
      const float* kj = k_base + size_t(j) * a.kv_ld;
      float dot = 0.0f;
      for (int d = 0; d < dh; ++d) dot += q_s[warp][d] * kj[d];
      s = a.scale * dot;
    }
    // Lane 0 always holds a key here, so the new max is finite and the
    // first tile's correction exp(-inf) is 0.
    const float m_new = fmaxf(m, warp_reduce(s, MaxOp{}));
    const float correction = expf(m - m_new);
    const float p = j < keys ? expf(s - m_new) : 0.0f;
    l = l * correction + warp_reduce(p, SumOp{});
    for (int c = 0; c < kDimsPerLane; ++c) o[c] *= correction;
    const int n = keys - t0 < kTile ? keys - t0 : kTile;
    for (int jj = 0; jj < n; ++jj) {
      const float pj = __shfl_sync(kFullMask, p, jj);
      const float* vj = v_base + size_t(t0 + jj) * a.kv_ld;
      for (int c = 0; c < kDimsPerLane; ++c) {
        const int d = lane + 32 * c;
        if (d < dh) o[c] += pj * vj[d];
      }
    }
    m = m_new;
  }

  float* out = a.out + size_t(qr.first + i) * a.out_ld + col;
  if (splits == 1) {
    if (!active) return;
    for (int c = 0; c < kDimsPerLane; ++c) {
      const int d = lane + 32 * c;
      if (d < dh) out[d] = l > 0.0f ? o[c] / l : 0.0f;
    }
    return;
  }

  // Merge the splits of each query: rescale each to the common max.
  for (int c = 0; c < kDimsPerLane; ++c) {
    const int d = lane + 32 * c;
    if (d < dh) o_s[warp][d] = o[c];
  }
  if (lane == 0) {
    m_s[warp] = m;
    l_s[warp] = l;
  }
  __syncthreads();
  if (split != 0 || !active) return;
  float m_all = -INFINITY;
  for (int s = 0; s < splits; ++s) m_all = fmaxf(m_all, m_s[s * queries_per_block + slot]);
  float l_all = 0.0f, acc[kDimsPerLane] = {};
  if (m_all != -INFINITY) {  // else no keys at all: zeros
    for (int s = 0; s < splits; ++s) {
      const int w = s * queries_per_block + slot;
      const float f = expf(m_s[w] - m_all);  // 0 for a split that saw no keys
      l_all += l_s[w] * f;
      for (int c = 0; c < kDimsPerLane; ++c) {
        const int d = lane + 32 * c;
        if (d < dh) acc[c] += o_s[w][d] * f;
      }
    }
  }
  for (int c = 0; c < kDimsPerLane; ++c) {
    const int d = lane + 32 * c;
    if (d < dh) out[d] = l_all > 0.0f ? acc[c] / l_all : 0.0f;
  }
}

}  // namespace

CudaStatus attention_f32_cuda(const CudaAttention& a, CudaStream stream) {
  if (a.batch < 0 || a.heads < 1 || a.dh < 1 || a.dh > kCudaAttentionMaxDh || a.kv_group < 1 || a.q_rows.rows < 0 ||
      a.batch > 65535 || a.heads > 65535)
    return cuda_detail::kInvalidArgument;
  if (a.append_k != nullptr &&
      (a.append_v == nullptr || a.kv_group != 1 || a.q_rows.rows != 1 || a.q_rows.length != nullptr))
    return cuda_detail::kInvalidArgument;
  if (a.batch == 0 || a.q_rows.rows == 0) return 0;
  const int queries_per_block = a.q_rows.rows >= 4 ? 4 : a.q_rows.rows >= 2 ? 2 : 1;
  const dim3 grid((a.q_rows.rows + queries_per_block - 1) / queries_per_block, a.heads, a.batch);
  attention_kernel<<<grid, kWarps * 32, 0, stream>>>(a, queries_per_block);
  return cuda_detail::launch_status();
}

}  // namespace mt
