// Dropout: forward y = x * mask, backward dx += dy * mask, the mask saved.
#include "autograd/dropout.hpp"

#include "autograd/parallel.hpp"

namespace mt::autograd {

namespace {

// SplitMix64 (Steele et al. 2014): a good 64-bit mix of a counter.
uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <class T>
void dropout_backward(Graph<T>& g, const Op<T>& op) {
  const T* mask = op.saved[0]->data();
  const T* dy = op.out->grad_data();
  T* dx = op.in[0]->grad_data();
  parallel_range(g, op.out->numel(), 1 << 14, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) dx[i] += dy[i] * mask[i];
  });
}

}  // namespace

double dropout_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  const uint64_t key = splitmix64(seed ^ splitmix64(stream));
  return double(splitmix64(key + i) >> 11) * 0x1.0p-53;
}

template <class T>
Tensor<T>* dropout(Graph<T>& g, Tensor<T>* x, double p) {
  MT_AG_CHECK(p >= 0.0 && p < 1.0, "dropout: p must be in [0, 1)");
  if (p == 0.0 || !g.training()) return x;
  const uint64_t seed = g.rng_state().seed;
  const uint64_t stream = g.next_dropout_stream();
  Tensor<T>* y = g.make(x->shape, x->requires_grad);
  Tensor<T>* mask = g.make(x->shape, false);
  const T keep_scale = T(1.0 / (1.0 - p));
  parallel_range(g, x->numel(), 1 << 14, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) {
      mask->value[i] = dropout_uniform(seed, stream, uint64_t(i)) < p ? T(0) : keep_scale;
      y->value[i] = x->value[i] * mask->value[i];
    }
  });
  if (y->requires_grad) {
    Op<T>& op = g.record(&dropout_backward<T>, y);
    op.in[0] = x;
    op.saved[0] = mask;
  }
  return y;
}

template Tensor<float>* dropout<float>(Graph<float>&, Tensor<float>*, double);
template Tensor<double>* dropout<double>(Graph<double>&, Tensor<double>*, double);

}  // namespace mt::autograd
