// Dropout: forward y = x * mask, backward dx += dy * mask, the mask saved.
#include "autograd/dropout.hpp"

#include <cmath>
#include <type_traits>

#include "autograd/dropout_mask.hpp"
#include "autograd/dropout_mask_scalar.hpp"
#include "autograd/parallel.hpp"
#include "support/splitmix64.hpp"

namespace mt::autograd {

namespace {

using detail::splitmix64;

uint64_t stream_key(uint64_t seed, uint64_t stream) { return splitmix64(seed ^ splitmix64(stream)); }

// dropout_uniform(seed, stream, i) < p without doubles: u = (z >> 11) 2^-53
// is exact, so u < p exactly when the integer z >> 11 < p 2^53, i.e. when it
// is below ceil(p 2^53) (exact in double: p < 1 scaled by a power of two).
// Per element that leaves one SplitMix64 and an integer compare; the per-
// element key and int-to-double conversion made dropout 11% of a training
// step on two threads (mt_train, tiny, dropout 0.3).
uint64_t drop_threshold(double p) { return uint64_t(std::ceil(p * 0x1.0p53)); }

template <class T>
void dropout_backward(Graph<T>& g, const Op<T>& op) {
  const T* mask = op.saved[0]->data();
  const T* dy = op.out->grad_data();
  T* dx = op.in[0]->grad_data();
  const bool fresh = op.in[0]->grad_pending;  // first use: written, not added (Op::writes_fresh)
  parallel_range(g, op.out->numel(), 1 << 14, [=](int64_t b, int64_t e, int) {
    if (fresh)
      for (int64_t i = b; i < e; ++i) dx[i] = dy[i] * mask[i];
    else
      for (int64_t i = b; i < e; ++i) dx[i] += dy[i] * mask[i];
  });
}

}  // namespace

double dropout_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  return double(splitmix64(stream_key(seed, stream) + i) >> 11) * 0x1.0p-53;
}

bool dropout_drops(uint64_t seed, uint64_t stream, uint64_t i, double p) {
  return !dropout_kept(stream_key(seed, stream), i, drop_threshold(p));
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
  const uint64_t key = stream_key(seed, stream), threshold = drop_threshold(p);
  const T* in = x->data();
  T* out = y->data();
  T* m = mask->data();
  // float: the kernel table's ISA picks the implementation; double (gradient checks): the definition.
  void (*run)(const T*, T*, T*, int64_t, int64_t, uint64_t, uint64_t, T) = nullptr;
  if constexpr (std::is_same_v<T, float>)
    run = dropout_mask_f32_for(g.kernels());
  else
    run = &dropout_mask_scalar<T>;
  parallel_range(g, x->numel(), 1 << 14,
                 [=](int64_t b, int64_t e, int) { run(in, out, m, b, e, key, threshold, keep_scale); });
  if (y->requires_grad) {
    Op<T>& op = g.record(&dropout_backward<T>, y);
    op.in[0] = x;
    op.saved[0] = mask;
    op.writes_fresh[0] = true;  // x's gradient (dropout_backward)
  }
  return y;
}

template Tensor<float>* dropout<float>(Graph<float>&, Tensor<float>*, double);
template Tensor<double>* dropout<double>(Graph<double>&, Tensor<double>*, double);

}  // namespace mt::autograd
