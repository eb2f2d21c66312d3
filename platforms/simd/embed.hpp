// Embedding lookup from a packed [V, C] table with xsimd, templated on Arch.
// Row `id` is packed column id: its values sit kPanelWidth floats apart.
#pragma once

#include <xsimd/xsimd.hpp>

#include "mt/kernels.h"

namespace mt::simd {

template <class Arch>
void embed_f32(const float* table_packed, int C, int id, float scale, const float* position, float* y) {
  using V = xsimd::batch<float, Arch>;
  constexpr int W = int(V::size);
  const float* col = table_packed + size_t(id / kPanelWidth) * C * kPanelWidth + id % kPanelWidth;
  const V vscale(scale);
  int c = 0;
  for (; c + W <= C; c += W) {
    alignas(64) float t[W];
    for (int j = 0; j < W; ++j) t[j] = col[size_t(c + j) * kPanelWidth];
    V e = V::load_aligned(t) * vscale;
    if (position) e += V::load_unaligned(position + c);
    e.store_unaligned(y + c);
  }
  for (; c < C; ++c) {
    const float e = col[size_t(c) * kPanelWidth] * scale;
    y[c] = position ? e + position[c] : e;
  }
}

}  // namespace mt::simd
