// Scaled dot-product attention of one head (Vaswani et al. 2017, eq. 1) with
// xsimd, templated on Arch: scores, softmax over the visible keys, weighted
// sum of values. Any head size dh >= 1; typical ones are multiples of W.
#pragma once

#include <xsimd/xsimd.hpp>

#include "mt/kernels.h"
#include "simd/softmax.hpp"

namespace mt::simd {

// a . b over n floats.
template <class Arch>
inline float dot_f32(const float* a, const float* b, int n) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  // Two chains halve the fma latency the row waits on.
  V acc0(0.0f), acc1(0.0f);
  int i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    acc0 = xsimd::fma(V::load_unaligned(a + i), V::load_unaligned(b + i), acc0);
    acc1 = xsimd::fma(V::load_unaligned(a + i + W), V::load_unaligned(b + i + W), acc1);
  }
  if (i + W <= n) {
    acc0 = xsimd::fma(V::load_unaligned(a + i), V::load_unaligned(b + i), acc0);
    i += W;
  }
  float s = xsimd::hadd(acc0 + acc1);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// out[d] = sum_j p[j] * v[j * stride + d] for d in [d0, d0 + U * W).
template <class Arch, int U>
inline void weighted_sum_f32(const float* p, const float* v, size_t stride, int keys, int d0, float* out) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  V acc[U];
  for (int u = 0; u < U; ++u) acc[u] = V(0.0f);
  for (int j = 0; j < keys; ++j) {
    const V pj(p[j]);
    const float* vj = v + size_t(j) * stride + d0;
    for (int u = 0; u < U; ++u) acc[u] = xsimd::fma(pj, V::load_unaligned(vj + u * W), acc[u]);
  }
  for (int u = 0; u < U; ++u) acc[u].store_unaligned(out + d0 + u * W);
}

template <class Arch>
void attention_f32(const float* q, size_t q_stride, const float* k, const float* v, size_t kv_stride, float* out,
                   size_t out_stride, int Tq, int Tk, int dh, float scale, int causal_offset, float* scratch) {
  constexpr int W = int(xsimd::batch<float, Arch>::size);
  for (int i = 0; i < Tq; ++i) {
    const float* qi = q + size_t(i) * q_stride;
    float* oi = out + size_t(i) * out_stride;
    int keys = Tk;
    if (causal_offset >= 0 && i + causal_offset + 1 < keys) keys = i + causal_offset + 1;
    for (int j = 0; j < keys; ++j) scratch[j] = scale * dot_f32<Arch>(qi, k + size_t(j) * kv_stride, dh);
    softmax_f32<Arch>(scratch, keys);
    // Values in column blocks of 4, 2 or 1 vectors held in registers.
    int d = 0;
    for (; d + 4 * W <= dh; d += 4 * W) weighted_sum_f32<Arch, 4>(scratch, v, kv_stride, keys, d, oi);
    for (; d + 2 * W <= dh; d += 2 * W) weighted_sum_f32<Arch, 2>(scratch, v, kv_stride, keys, d, oi);
    for (; d + W <= dh; d += W) weighted_sum_f32<Arch, 1>(scratch, v, kv_stride, keys, d, oi);
    for (; d < dh; ++d) {
      float o = 0.0f;
      for (int j = 0; j < keys; ++j) o += scratch[j] * v[size_t(j) * kv_stride + d];
      oi[d] = o;
    }
  }
}

}  // namespace mt::simd
