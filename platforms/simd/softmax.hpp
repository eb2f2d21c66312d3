// Softmax, log-softmax, argmax and top-k of one row with xsimd, templated on
// Arch, and the loss gradient's scaled exp.
// Tails go through a padded vector so exp() is the same function everywhere.
#pragma once

#include <xsimd/xsimd.hpp>

#include "mt/kernels.h"

namespace mt::simd {

// Largest lane. Written as "x > m ? x : m" (as the reference) so NaN never wins.
template <class Arch>
inline float hmax_f32(xsimd::batch<float, Arch> v) {
  constexpr int W = int(xsimd::batch<float, Arch>::size);
  alignas(64) float t[W];
  v.store_aligned(t);
  float m = t[0];
  for (int i = 1; i < W; ++i) m = t[i] > m ? t[i] : m;
  return m;
}

// max(x[0..n)), n >= 1; NaNs are skipped unless x[0] is one.
template <class Arch>
inline float max_f32(const float* x, int n) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  float m = x[0];
  int i = 0;
  if (n >= W) {
    V vm(m);
    for (; i + W <= n; i += W) {
      const V v = V::load_unaligned(x + i);
      vm = xsimd::select(v > vm, v, vm);
    }
    m = hmax_f32<Arch>(vm);
  }
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// e[i] = exp(x[i] - m) for i < n, into e (may alias x); returns sum of e.
template <class Arch>
inline float exp_sum_f32(const float* x, float* e, int n, float m) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  const V vm(m);
  V vsum(0.0f);
  int i = 0;
  for (; i + W <= n; i += W) {
    const V v = xsimd::exp(V::load_unaligned(x + i) - vm);
    v.store_unaligned(e + i);
    vsum += v;
  }
  float sum = xsimd::hadd(vsum);
  if (i < n) {
    alignas(64) float t[W];
    for (int j = 0; j < W; ++j) t[j] = i + j < n ? x[i + j] : m;
    xsimd::exp(V::load_aligned(t) - vm).store_aligned(t);
    for (int j = 0; i + j < n; ++j) {
      e[i + j] = t[j];
      sum += t[j];
    }
  }
  return sum;
}

template <class Arch>
void softmax_f32(float* x, int n) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  if (n <= 0) return;
  const float sum = exp_sum_f32<Arch>(x, x, n, max_f32<Arch>(x, n));
  const float inv = 1.0f / sum;
  const V vinv(inv);
  int i = 0;
  for (; i + W <= n; i += W) (V::load_unaligned(x + i) * vinv).store_unaligned(x + i);
  for (; i < n; ++i) x[i] *= inv;
}

// The maximum and log(sum(exp(x - max))): reads the row twice, writes nothing.
template <class Arch>
void log_sum_exp_f32(const float* x, int n, float* max, float* log_sum) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  if (n <= 0) {
    *max = -__builtin_inff(), *log_sum = 0.0f;
    return;
  }
  const float m = max_f32<Arch>(x, n);
  const V vm(m);
  V vsum(0.0f);
  int i = 0;
  for (; i + W <= n; i += W) vsum += xsimd::exp(V::load_unaligned(x + i) - vm);
  float sum = xsimd::hadd(vsum);
  if (i < n) {
    alignas(64) float t[W];
    for (int j = 0; j < W; ++j) t[j] = i + j < n ? x[i + j] : m;
    xsimd::exp(V::load_aligned(t) - vm).store_aligned(t);
    for (int j = 0; i + j < n; ++j) sum += t[j];
  }
  *max = m, *log_sum = __builtin_logf(sum);  // libm's, once per row
}

template <class Arch>
float log_softmax_f32(const float* x, float* y, int n) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  if (n <= 0) return -__builtin_inff();
  // The sums first: y may alias x, which is read again below.
  float m = 0.0f, log_sum = 0.0f;
  log_sum_exp_f32<Arch>(x, n, &m, &log_sum);
  const V vm(m), vl(log_sum);
  int i = 0;
  for (; i + W <= n; i += W) (V::load_unaligned(x + i) - vm - vl).store_unaligned(y + i);
  for (; i < n; ++i) y[i] = x[i] - m - log_sum;
  return m + log_sum;
}

// y = scale * exp(x - shift) - offset (accumulate: y += that); y may alias x.
// Tails through a padded vector: exp() is the same function for every i.
template <class Arch>
void scaled_exp_f32(const float* x, int n, float shift, float scale, float offset, float* y, bool accumulate) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  const V vshift(shift), vscale(scale), voffset(offset);
  int i = 0;
  if (accumulate) {
    for (; i + W <= n; i += W) {
      const V v = vscale * xsimd::exp(V::load_unaligned(x + i) - vshift) - voffset;
      (V::load_unaligned(y + i) + v).store_unaligned(y + i);
    }
  } else {
    for (; i + W <= n; i += W)
      (vscale * xsimd::exp(V::load_unaligned(x + i) - vshift) - voffset).store_unaligned(y + i);
  }
  if (i < n) {
    alignas(64) float t[W];
    for (int j = 0; j < W; ++j) t[j] = i + j < n ? x[i + j] : shift;
    (vscale * xsimd::exp(V::load_aligned(t) - vshift) - voffset).store_aligned(t);
    for (int j = 0; i + j < n; ++j) y[i + j] = accumulate ? y[i + j] + t[j] : t[j];
  }
}

// First index of the maximum, as the reference: find the maximum of the
// non-NaN values, then its first occurrence.
template <class Arch>
int argmax_f32(const float* x, int n, float* max_value) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  if (n <= 0) {
    if (max_value) *max_value = -__builtin_inff();
    return 0;
  }
  int best = 0;
  if (x[0] == x[0]) {  // a NaN at 0 is never beaten in the reference either
    const float m = max_f32<Arch>(x, n);
    const V vm(m);
    int i = 0;
    while (i + W <= n && !xsimd::any(V::load_unaligned(x + i) == vm)) i += W;
    while (x[i] != m) ++i;  // m is in x, so this stops by n
    best = i;
  }
  if (max_value) *max_value = x[best];
  return best;
}

// The reference's insertion, but once k values are held, a whole vector of
// the row is skipped unless one of its lanes beats the k-th: almost every
// vector of a vocabulary-sized row after the first few. Ranks x - m - l
// (m = l = 0: x itself), computed as log_softmax_f32 computes it.
template <class Arch>
void top_k_shifted(const float* x, int n, int k, float m, float l, float* values, int32_t* indices, int* count) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  int c = 0;
  auto offer = [&](int v, float value) {
    if (!(value > -__builtin_inff()) || (c == k && !(value > values[k - 1]))) return;
    int i = c < k ? c++ : k - 1;
    for (; i > 0 && value > values[i - 1]; --i) values[i] = values[i - 1], indices[i] = indices[i - 1];
    values[i] = value;
    indices[i] = v;
  };
  const bool shifted = m != 0.0f || l != 0.0f;
  const auto at = [&](int v) { return shifted ? x[v] - m - l : x[v]; };
  int v = 0;
  for (; v < n && c < k; ++v) offer(v, at(v));
  const V vm(m), vl(l);
  alignas(64) float lanes[W];
  for (; v + W <= n; v += W) {
    const V y = shifted ? V::load_unaligned(x + v) - vm - vl : V::load_unaligned(x + v);
    if (!xsimd::any(y > V(values[k - 1]))) continue;  // NaN and -inf compare false
    y.store_aligned(lanes);
    for (int j = 0; j < W; ++j) offer(v + j, lanes[j]);
  }
  for (; v < n; ++v) offer(v, at(v));
  *count = c;
}

template <class Arch>
void top_k_f32(const float* x, int n, int k, float* values, int32_t* indices, int* count) {
  top_k_shifted<Arch>(x, n, k, 0.0f, 0.0f, values, indices, count);
}

template <class Arch>
void log_softmax_top_k_f32(const float* x, int n, int k, float* values, int32_t* indices, int* count) {
  float m = 0.0f, log_sum = 0.0f;
  log_sum_exp_f32<Arch>(x, n, &m, &log_sum);
  top_k_shifted<Arch>(x, n, k, m, log_sum, values, indices, count);
}

}  // namespace mt::simd
