// LayerNorm of one row (Ba et al. 2016) with xsimd, templated on Arch:
// mean first, then the variance about it (two passes, in float).
#pragma once

#include <xsimd/xsimd.hpp>

#include "mt/kernels.h"

namespace mt::simd {

template <class Arch>
void layer_norm_f32(const float* x, const float* gamma, const float* beta, float* y, int C, float eps) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  if (C <= 0) return;

  V vsum(0.0f);
  int i = 0;
  for (; i + W <= C; i += W) vsum += V::load_unaligned(x + i);
  float sum = xsimd::hadd(vsum);
  for (; i < C; ++i) sum += x[i];
  const float mean = sum / float(C);

  const V vmean(mean);
  V vsq(0.0f);
  for (i = 0; i + W <= C; i += W) {
    const V d = V::load_unaligned(x + i) - vmean;
    vsq = xsimd::fma(d, d, vsq);
  }
  float sq = xsimd::hadd(vsq);
  for (; i < C; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float rstd = (V(1.0f) / xsimd::sqrt(V(sq / float(C) + eps))).get(0);

  const V vrstd(rstd);
  for (i = 0; i + W <= C; i += W) {
    const V d = (V::load_unaligned(x + i) - vmean) * vrstd;
    xsimd::fma(d, V::load_unaligned(gamma + i), V::load_unaligned(beta + i)).store_unaligned(y + i);
  }
  for (; i < C; ++i) y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
}

}  // namespace mt::simd
