// Packing of linear-layer weights into the panel layout of mt/kernels.h.
#include <cstring>

#include "mt/kernels.h"

namespace mt {

void pack_weights_f32(const float* w, int N, int K, float* packed) {
  // Zero first: rows past N in the last panel must read as zeros.
  std::memset(packed, 0, packed_size(N, K) * sizeof(float));
  for (int n = 0; n < N; ++n) {
    float* col = packed + size_t(n / kPanelWidth) * K * kPanelWidth + n % kPanelWidth;
    const float* row = w + size_t(n) * K;
    for (int k = 0; k < K; ++k) col[size_t(k) * kPanelWidth] = row[k];
  }
}

}  // namespace mt
