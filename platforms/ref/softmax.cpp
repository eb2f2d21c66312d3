// Reference softmax, log-softmax, argmax and top-k of one row, and the loss
// gradient's scaled exp. Subtracting the maximum first keeps exp() from
// overflowing (scaled_exp_f32 subtracts the caller's shift instead).
#include <cmath>

#include "ref/kernels_ref.h"

namespace mt {

namespace {

float max_f32(const float* x, int n) {
  float m = x[0];
  for (int i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

}  // namespace

void softmax_f32_ref(float* x, int n) {
  if (n <= 0) return;
  const float m = max_f32(x, n);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  for (int i = 0; i < n; ++i) x[i] /= sum;
}

void log_sum_exp_f32_ref(const float* x, int n, float* max, float* log_sum) {
  if (n <= 0) {
    *max = -INFINITY, *log_sum = 0.0f;
    return;
  }
  const float m = max_f32(x, n);
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += std::exp(x[i] - m);
  *max = m, *log_sum = std::log(sum);
}

float log_softmax_f32_ref(const float* x, float* y, int n) {
  if (n <= 0) return -INFINITY;
  float m = 0.0f, log_sum = 0.0f;
  log_sum_exp_f32_ref(x, n, &m, &log_sum);
  for (int i = 0; i < n; ++i) y[i] = x[i] - m - log_sum;
  return m + log_sum;
}

int argmax_f32_ref(const float* x, int n, float* max_value) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;  // strict: the first index wins ties
  if (max_value) *max_value = n > 0 ? x[best] : -INFINITY;
  return best;
}

// Insertion into a sorted list of at most k: a value enters only if it beats
// the current k-th (strictly, so the earlier index keeps a tie).
// shift(x) is what is ranked: x itself, or its log-probability.
template <class Shift>
void top_k_of(const float* x, int n, int k, float* values, int32_t* indices, int* count, Shift shift) {
  int c = 0;
  for (int v = 0; v < n; ++v) {
    const float value = shift(x[v]);
    if (!(value > -INFINITY) || (c == k && !(value > values[k - 1]))) continue;  // -inf, NaN, or not better
    int i = c < k ? c++ : k - 1;
    for (; i > 0 && value > values[i - 1]; --i) values[i] = values[i - 1], indices[i] = indices[i - 1];
    values[i] = value;
    indices[i] = v;
  }
  *count = c;
}

void top_k_f32_ref(const float* x, int n, int k, float* values, int32_t* indices, int* count) {
  top_k_of(x, n, k, values, indices, count, [](float value) { return value; });
}

void log_softmax_top_k_f32_ref(const float* x, int n, int k, float* values, int32_t* indices, int* count) {
  float m = 0.0f, log_sum = 0.0f;
  log_sum_exp_f32_ref(x, n, &m, &log_sum);
  top_k_of(x, n, k, values, indices, count, [&](float value) { return value - m - log_sum; });
}

void scaled_exp_f32_ref(const float* x, int n, float shift, float scale, float offset, float* y, bool accumulate) {
  for (int i = 0; i < n; ++i) {
    const float v = scale * std::exp(x[i] - shift) - offset;
    y[i] = accumulate ? y[i] + v : v;
  }
}

}  // namespace mt
