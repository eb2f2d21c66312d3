// Reference LayerNorm (Ba et al. 2016) of one row: mean, then variance about
// the mean (two passes, which stays accurate when |mean| >> stddev).
#include <cmath>

#include "ref/kernels_ref.h"

namespace mt {

void layer_norm_f32_ref(const float* x, const float* gamma, const float* beta, float* y, int C, float eps) {
  float sum = 0.0f;
  for (int c = 0; c < C; ++c) sum += x[c];
  const float mean = sum / float(C);
  float sq = 0.0f;
  for (int c = 0; c < C; ++c) sq += (x[c] - mean) * (x[c] - mean);
  const float rstd = 1.0f / std::sqrt(sq / float(C) + eps);
  for (int c = 0; c < C; ++c) y[c] = (x[c] - mean) * rstd * gamma[c] + beta[c];
}

}  // namespace mt
