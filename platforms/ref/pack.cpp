// Packing of linear-layer weights into the panel layouts of mt/kernels.h:
// fp32 panels, and int8 panels with K in groups of 4 (packed_k4n16).
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

void unpack_weights_f32(const float* packed, int N, int K, float* w) {
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) w[size_t(n) * K + k] = packed_at(packed, K, n, k);
}

void pack_weights_i8(const int8_t* w, int N, int K, int8_t* packed) {
  // Zero first: columns past N and k past K (up to Kp) must read as zeros.
  std::memset(packed, 0, packed_size_i8(N, K));
  for (int n = 0; n < N; ++n) {
    const int8_t* row = w + size_t(n) * K;
    for (int k = 0; k < K; ++k) packed[packed_offset_i8(K, n, k)] = row[k];
  }
}

void unpack_weights_i8(const int8_t* packed, int N, int K, int8_t* w) {
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) w[size_t(n) * K + k] = packed[packed_offset_i8(K, n, k)];
}

}  // namespace mt
