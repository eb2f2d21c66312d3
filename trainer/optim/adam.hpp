// Adam (Kingma & Ba 2015) with the settings of Vaswani et al. 2017 (beta1 0.9,
// beta2 0.98, eps 1e-9), decoupled weight decay (Loshchilov & Hutter 2019) as
// an option, gradient-norm clipping, and the learning-rate schedules:
//   noam:         lr = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)   (the paper, eq. 3)
//   inverse_sqrt: lr = peak * min(step / warmup, sqrt(warmup / step))              (fairseq)
// and, on either, an optional cooldown: the last `cooldown` of `total` updates
// take the schedule's rate linearly down towards zero (update k of the
// cooldown's n at (n - k + 1) / n of it), the decay to zero a run of known
// length allows (Hägele et al. 2024, "warmup-stable-decay").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autograd/graph.hpp"
#include "mt/status.hpp"

namespace mt::train {

enum class Schedule { noam, inverse_sqrt };

struct AdamOptions {
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-9;
  double weight_decay = 0.0;  // decoupled: w -= lr * weight_decay * w (not on biases or LayerNorm)
  double clip_norm = 0.0;     // > 0: scale gradients so their global L2 norm is at most this
  Schedule schedule = Schedule::inverse_sqrt;
  double lr = 5e-4;  // inverse_sqrt: the peak; noam: the factor
  int warmup = 4000;
  int d_model = 512;  // noam only
  int64_t total = 0;  // the run's updates, for the cooldown
  int64_t cooldown = 0;  // > 0: the last `cooldown` updates of `total` decay linearly (0: off)
};

double learning_rate(const AdamOptions& o, int64_t step);

template <class T>
class Adam {
 public:
  Adam(autograd::Graph<T>& graph, const AdamOptions& options);

  // One update from the gradients now in the graph's parameters, each scaled
  // by grad_scale first (e.g. 1 / target tokens). Returns the gradient norm
  // before clipping. Leaves the gradients as they are (zero_grad is the caller's).
  double step(double grad_scale = 1.0);

  int64_t steps() const { return step_; }
  double last_learning_rate() const { return last_lr_; }
  // Multiplies the schedule's rate from the next step on (mt_train's
  // cooldown by training time, which no step count can say ahead). 1: as is.
  void set_learning_rate_scale(double scale) { lr_scale_ = scale; }

  // Optimizer state, for checkpoints: the step and both moments.
  void save(std::vector<char>* out) const;
  Status load(const char* data, size_t size, size_t* consumed);

 private:
  autograd::Graph<T>& g_;
  AdamOptions o_;
  int64_t step_ = 0;
  double last_lr_ = 0.0;
  double lr_scale_ = 1.0;
  std::vector<std::vector<T>> m_, v_;  // per parameter, in graph.parameters() order
  std::vector<bool> decay_;            // weight decay applies (matrices, not biases/norms)
};

extern template class Adam<float>;
extern template class Adam<double>;

}  // namespace mt::train
