#include "cuda/adam.hpp"

#include <algorithm>
#include <cmath>

#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "optim/adam_state.hpp"

namespace mt::autograd::gpu {

using cuda_detail::block_sum;
using cuda_detail::blocks_for;
using cuda_detail::kElementThreads;

namespace {

constexpr int kMaxNormBlocks = 64;  // per parameter

// partial[blockIdx.x] = sum of g^2 over this block's grid-stride share, in double.
__global__ void sum_squares_kernel(double* partial, const float* g, int64_t n) {
  __shared__ double shared[32];
  double acc = 0.0;
  MT_GPU_FOR(i, n) acc += double(g[i]) * double(g[i]);
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// The CPU's update in the same float operations (optim/adam.cpp).
__global__ void adam_kernel(float* w, const float* grad, float* m, float* v, int64_t n, float s, float b1, float b2,
                            float step_size, float sqrt_bias2, float eps, float decay) {
  MT_GPU_FOR(j, n) {
    const float gj = grad[j] * s;
    m[j] = b1 * m[j] + (1.0f - b1) * gj;
    v[j] = b2 * v[j] + (1.0f - b2) * gj * gj;
    w[j] -= step_size * m[j] / (sqrtf(v[j]) / sqrt_bias2 + eps) + decay * w[j];
  }
}

}  // namespace

Adam::Adam(Graph& graph, const train::AdamOptions& options) : g_(graph), o_(options) {
  unsigned partials = 0;
  for (const Tensor* p : g_.parameters()) {
    offset_.push_back(total_);
    total_ += size_t(p->numel());
    const unsigned blocks = std::min<unsigned>(kMaxNormBlocks, blocks_for(p->numel()));
    partial_offset_.push_back(partials);
    partial_count_.push_back(blocks);
    partials += blocks;
  }
  m_.reserve(std::max<size_t>(1, total_) * sizeof(float));
  v_.reserve(std::max<size_t>(1, total_) * sizeof(float));
  MT_GPU_CHECK(cudaMemsetAsync(m_.ptr, 0, m_.bytes, g_.stream()));
  MT_GPU_CHECK(cudaMemsetAsync(v_.ptr, 0, v_.bytes, g_.stream()));
  partials_.reserve(std::max(1u, partials) * sizeof(double));
  host_partials_.resize(partials);
}

double Adam::step(double grad_scale) {
  const auto& params = g_.parameters();
  double* partials = static_cast<double*>(partials_.ptr);
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i]->numel() == 0) continue;
    sum_squares_kernel<<<partial_count_[i], kElementThreads, 0, g_.stream()>>>(partials + partial_offset_[i],
                                                                               params[i]->grad, params[i]->numel());
    MT_GPU_LAUNCHED();
  }
  if (!host_partials_.empty()) {
    MT_GPU_CHECK(cudaMemcpyAsync(host_partials_.data(), partials, host_partials_.size() * sizeof(double),
                                 cudaMemcpyDeviceToHost, g_.stream()));
    g_.synchronize();
  }
  double norm2 = 0.0;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i]->numel() > 0)
      for (unsigned b = 0; b < partial_count_[i]; ++b) norm2 += host_partials_[partial_offset_[i] + b];
  const double norm = std::sqrt(norm2) * grad_scale;
  double scale = grad_scale;
  if (o_.clip_norm > 0.0 && norm > o_.clip_norm) scale *= o_.clip_norm / norm;

  ++step_;
  last_lr_ = train::learning_rate(o_, step_) * lr_scale_;
  const double bias1 = 1.0 - std::pow(o_.beta1, double(step_));
  const double bias2 = 1.0 - std::pow(o_.beta2, double(step_));
  const double step_size = last_lr_ / bias1;
  float* m = static_cast<float*>(m_.ptr);
  float* v = static_cast<float*>(v_.ptr);
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor* p = params[i];
    const int64_t n = p->numel();
    if (n == 0) continue;
    // Weight decay on matrices (weights, embeddings), as the CPU: not on biases or LayerNorm.
    const float decay = p->shape.rank == 2 ? float(last_lr_ * o_.weight_decay) : 0.0f;
    adam_kernel<<<blocks_for(n), kElementThreads, 0, g_.stream()>>>(
        p->value, p->grad, m + offset_[i], v + offset_[i], n, float(scale), float(o_.beta1), float(o_.beta2),
        float(step_size), float(std::sqrt(bias2)), float(o_.eps), decay);
    MT_GPU_LAUNCHED();
  }
  return norm;
}

void Adam::save(std::vector<char>* out) const {
  std::vector<float> m(total_), v(total_);
  if (total_ > 0) {
    MT_GPU_CHECK(cudaMemcpyAsync(m.data(), m_.ptr, total_ * sizeof(float), cudaMemcpyDeviceToHost, g_.stream()));
    MT_GPU_CHECK(cudaMemcpyAsync(v.data(), v_.ptr, total_ * sizeof(float), cudaMemcpyDeviceToHost, g_.stream()));
    g_.synchronize();
  }
  std::vector<train::Moments<const float>> tensors;
  for (size_t i = 0; i < offset_.size(); ++i)
    tensors.push_back({m.data() + offset_[i], v.data() + offset_[i], size_t(g_.parameters()[i]->numel())});
  train::save_adam_state<float>(step_, tensors, out);
}

Status Adam::load(const char* data, size_t size, size_t* consumed) {
  std::vector<float> m(total_), v(total_);
  std::vector<train::Moments<float>> tensors;
  for (size_t i = 0; i < offset_.size(); ++i)
    tensors.push_back({m.data() + offset_[i], v.data() + offset_[i], size_t(g_.parameters()[i]->numel())});
  int64_t step = 0;
  if (Status s = train::load_adam_state<float>(data, size, tensors, &step, consumed); !s.ok()) return s;
  if (total_ > 0) {
    MT_GPU_CHECK(cudaMemcpyAsync(m_.ptr, m.data(), total_ * sizeof(float), cudaMemcpyHostToDevice, g_.stream()));
    MT_GPU_CHECK(cudaMemcpyAsync(v_.ptr, v.data(), total_ * sizeof(float), cudaMemcpyHostToDevice, g_.stream()));
    g_.synchronize();
  }
  step_ = step;
  return {};
}

}  // namespace mt::autograd::gpu
