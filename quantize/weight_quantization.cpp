#include "weight_quantization.hpp"

#include <algorithm>
#include <cmath>

namespace mt::quantize {

void quantize_weight_rows(std::span<const float> w, int N, int K, std::span<int8_t> q, std::span<float> scales) {
  for (int n = 0; n < N; ++n) {
    const float* row = w.data() + size_t(n) * K;
    float amax = 0.0f;
    for (int k = 0; k < K; ++k) amax = std::max(amax, std::fabs(row[k]));
    const float scale = amax > 0.0f ? amax / 127.0f : 1.0f;
    scales[size_t(n)] = scale;
    for (int k = 0; k < K; ++k) {
      const float v = std::nearbyint(row[k] / scale);
      q[size_t(n) * K + k] = int8_t(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

}  // namespace mt::quantize
