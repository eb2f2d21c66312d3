#include "optim/adam.hpp"

#include "optim/adam_state.hpp"

#include "autograd/parallel.hpp"

#include <algorithm>
#include <cmath>

namespace mt::train {

double learning_rate(const AdamOptions& o, int64_t step) {
  const double s = double(std::max<int64_t>(step, 1)), w = double(std::max(o.warmup, 1));
  const double rate = o.schedule == Schedule::noam ? o.lr * std::pow(double(o.d_model), -0.5) *
                                                         std::min(std::pow(s, -0.5), s * std::pow(w, -1.5))
                                                   : o.lr * std::min(s / w, std::sqrt(w / s));
  if (o.cooldown <= 0) return rate;
  // Update k of the cooldown (k = step - (total - cooldown)) gets (cooldown - k + 1) / cooldown;
  // updates past `total` (a run continued longer) stay at the last one's.
  const int64_t left = std::max<int64_t>(1, std::min(o.cooldown, o.total - std::max<int64_t>(step, 1) + 1));
  return rate * double(left) / double(o.cooldown);
}

template <class T>
Adam<T>::Adam(autograd::Graph<T>& graph, const AdamOptions& options) : g_(graph), o_(options) {
  for (const autograd::Tensor<T>* p : g_.parameters()) {
    m_.emplace_back(size_t(p->numel()), T(0));
    v_.emplace_back(size_t(p->numel()), T(0));
    decay_.push_back(p->shape.rank == 2);  // weights and embeddings; not biases or LayerNorm
  }
}

template <class T>
double Adam<T>::step(double grad_scale) {
  const auto& params = g_.parameters();
  double norm2 = 0.0;
  for (const autograd::Tensor<T>* p : params) {
    if (p->grad.empty()) continue;
    for (T x : p->grad) norm2 += double(x) * double(x);
  }
  const double norm = std::sqrt(norm2) * grad_scale;
  double scale = grad_scale;
  if (o_.clip_norm > 0.0 && norm > o_.clip_norm) scale *= o_.clip_norm / norm;

  ++step_;
  last_lr_ = learning_rate(o_, step_) * lr_scale_;
  const double bias1 = 1.0 - std::pow(o_.beta1, double(step_));
  const double bias2 = 1.0 - std::pow(o_.beta2, double(step_));
  const double step_size = last_lr_ / bias1;
  const T b1 = T(o_.beta1), b2 = T(o_.beta2), one = T(1);
  for (size_t i = 0; i < params.size(); ++i) {
    autograd::Tensor<T>* p = params[i];
    if (p->grad.empty()) continue;
    T* w = p->value.data();
    const T* gr = p->grad.data();
    T* m = m_[i].data();
    T* v = v_[i].data();
    const T decay = decay_[i] ? T(last_lr_ * o_.weight_decay) : T(0);
    const T s = T(scale), ss = T(step_size), sb2 = T(std::sqrt(bias2)), eps = T(o_.eps);
    // Element by element, so splitting over the pool changes no value.
    autograd::parallel_range(g_, p->numel(), int64_t(1) << 14, [&](int64_t j0, int64_t j1, int) {
      for (int64_t j = j0; j < j1; ++j) {
        const T gj = gr[j] * s;
        m[j] = b1 * m[j] + (one - b1) * gj;
        v[j] = b2 * v[j] + (one - b2) * gj * gj;
        // Bias-corrected: w -= lr * m_hat / (sqrt(v_hat) + eps).
        w[j] -= ss * m[j] / (std::sqrt(v[j]) / sb2 + eps) + decay * w[j];
      }
    });
  }
  return norm;
}

template <class T>
void Adam<T>::save(std::vector<char>* out) const {
  std::vector<Moments<const T>> tensors;
  for (size_t i = 0; i < m_.size(); ++i) tensors.push_back({m_[i].data(), v_[i].data(), m_[i].size()});
  save_adam_state<T>(step_, tensors, out);
}

template <class T>
Status Adam<T>::load(const char* data, size_t size, size_t* consumed) {
  std::vector<Moments<T>> tensors;
  for (size_t i = 0; i < m_.size(); ++i) tensors.push_back({m_[i].data(), v_[i].data(), m_[i].size()});
  return load_adam_state<T>(data, size, tensors, &step_, consumed);
}

template class Adam<float>;
template class Adam<double>;

}  // namespace mt::train
