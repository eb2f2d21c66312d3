// Weights to int8: symmetric, one scale per output row (channel).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mt/model.hpp"

namespace mt::quantize {

// q[n, k] = clamp(round(w[n, k] / scale[n]), -127, 127) with
// scale[n] = max_k |w[n, k]| / 127 (a row of zeros gets scale 1). -128 is
// never used, so the grid is symmetric about 0. w: [N, K] row-major.
void quantize_weight_rows(std::span<const float> w, int N, int K, std::span<int8_t> q, std::span<float> scales);

}  // namespace mt::quantize
