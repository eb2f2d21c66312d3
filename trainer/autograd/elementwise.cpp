// Elementwise ops: y = a + b (da += dy, db += dy), y = x + b[col]
// (dbias[n] += sum over rows of dy[., n]), y = a * b (da += dy b, db += dy a),
// y = s x (dx += s dy), y = sum x (dx += dy).
#include "autograd/elementwise.hpp"

#include <algorithm>

#include "autograd/parallel.hpp"

namespace mt::autograd {

namespace {

constexpr int64_t kGrain = 1 << 14;  // elements per task: below this, threads cost more than they save

template <class T>
bool needs(Tensor<T>* t) {
  return t && t->requires_grad;
}

// An input's gradient on its first use (Op::writes_fresh) is a copy of dy.
template <class T>
void add_backward(Graph<T>& g, const Op<T>& op) {
  const T* dy = op.out->grad_data();
  T* dx[2] = {};
  bool fresh[2] = {};
  for (int j = 0; j < 2; ++j)
    if (needs(op.in[j])) dx[j] = op.in[j]->grad_data(), fresh[j] = op.in[j]->grad_pending;
  parallel_range(g, op.out->numel(), kGrain, [&](int64_t b, int64_t e, int) {
    for (int j = 0; j < 2; ++j) {
      if (!dx[j]) continue;
      if (fresh[j])
        std::copy(dy + b, dy + e, dx[j] + b);
      else
        accumulate(dx[j] + b, dy + b, e - b);
    }
  });
}

template <class T>
void add_bias_backward(Graph<T>& g, const Op<T>& op) {
  Tensor<T>* x = op.in[0];
  Tensor<T>* bias = op.in[1];
  const T* dy = op.out->grad_data();
  const int64_t M = op.out->rows();
  const int N = op.out->cols();
  if (needs(x)) {
    parallel_range(g, op.out->numel(), kGrain,
                   [&](int64_t b, int64_t e, int) { accumulate(x->grad_data() + b, dy + b, e - b); });
  }
  if (needs(bias)) {
    parallel_range(g, N, 64, [&](int64_t n0, int64_t n1, int) {
      for (int64_t m = 0; m < M; ++m) accumulate(bias->grad_data() + n0, dy + m * N + n0, n1 - n0);
    });
  }
}

template <class T>
void mul_backward(Graph<T>& g, const Op<T>& op) {
  Tensor<T>* a = op.in[0];
  Tensor<T>* b = op.in[1];
  const T* dy = op.out->grad_data();
  parallel_range(g, op.out->numel(), kGrain, [&](int64_t s, int64_t e, int) {
    if (needs(a))
      for (int64_t i = s; i < e; ++i) a->grad[i] += dy[i] * b->value[i];
    if (needs(b))
      for (int64_t i = s; i < e; ++i) b->grad[i] += dy[i] * a->value[i];
  });
}

template <class T>
void scale_backward(Graph<T>& g, const Op<T>& op) {
  const T s = T(std::get<ScaleArgs>(op.args).factor);
  const T* dy = op.out->grad_data();
  T* dx = op.in[0]->grad_data();
  parallel_range(g, op.out->numel(), kGrain, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) dx[i] += s * dy[i];
  });
}

template <class T>
void sum_backward(Graph<T>& g, const Op<T>& op) {
  const T dy = op.out->grad[0];
  T* dx = op.in[0]->grad_data();
  const int64_t n = op.in[0]->numel();
  for (int64_t i = 0; i < n; ++i) dx[i] += dy;
}

template <class T>
void check_same(const char* what, Tensor<T>* a, Tensor<T>* b) {
  MT_AG_CHECK(a->shape == b->shape, std::string(what) + ": shapes " + a->shape.str() + " and " + b->shape.str());
}

}  // namespace

template <class T>
Tensor<T>* add(Graph<T>& g, Tensor<T>* a, Tensor<T>* b) {
  check_same("add", a, b);
  Tensor<T>* y = g.make(a->shape, a->requires_grad || b->requires_grad);
  parallel_range(g, y->numel(), kGrain, [&](int64_t s, int64_t e, int) {
    for (int64_t i = s; i < e; ++i) y->value[i] = a->value[i] + b->value[i];
  });
  if (y->requires_grad) {
    Op<T>& op = g.record(&add_backward<T>, y);
    op.in = {a, b, nullptr, nullptr};
    op.writes_fresh = {true, b != a, false, false};  // add(x, x): one position (Op::writes_fresh)
  }
  return y;
}

template <class T>
Tensor<T>* add_bias(Graph<T>& g, Tensor<T>* x, Tensor<T>* b) {
  const int N = x->cols();
  MT_AG_CHECK(b->numel() == N, "add_bias: bias " + b->shape.str() + " for " + x->shape.str());
  Tensor<T>* y = g.make(x->shape, x->requires_grad || b->requires_grad);
  parallel_range(g, x->rows(), kGrain / N + 1, [&](int64_t m0, int64_t m1, int) {
    for (int64_t m = m0; m < m1; ++m)
      for (int n = 0; n < N; ++n) y->value[m * N + n] = x->value[m * N + n] + b->value[n];
  });
  if (y->requires_grad) g.record(&add_bias_backward<T>, y).in = {x, b, nullptr, nullptr};
  return y;
}

template <class T>
Tensor<T>* mul(Graph<T>& g, Tensor<T>* a, Tensor<T>* b) {
  check_same("mul", a, b);
  Tensor<T>* y = g.make(a->shape, a->requires_grad || b->requires_grad);
  parallel_range(g, y->numel(), kGrain, [&](int64_t s, int64_t e, int) {
    for (int64_t i = s; i < e; ++i) y->value[i] = a->value[i] * b->value[i];
  });
  if (y->requires_grad) g.record(&mul_backward<T>, y).in = {a, b, nullptr, nullptr};
  return y;
}

template <class T>
Tensor<T>* scale(Graph<T>& g, Tensor<T>* x, double s) {
  Tensor<T>* y = g.make(x->shape, x->requires_grad);
  const T st = T(s);
  parallel_range(g, y->numel(), kGrain, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) y->value[i] = st * x->value[i];
  });
  if (y->requires_grad) {
    Op<T>& op = g.record(&scale_backward<T>, y);
    op.in[0] = x;
    op.args = ScaleArgs{s};
  }
  return y;
}

template <class T>
Tensor<T>* sum(Graph<T>& g, Tensor<T>* x) {
  Tensor<T>* y = g.make(Shape{1}, x->requires_grad);
  double acc = 0.0;
  for (T v : x->value) acc += double(v);
  y->value[0] = T(acc);
  if (y->requires_grad) g.record(&sum_backward<T>, y).in[0] = x;
  return y;
}

#define MT_AG_INSTANTIATE(T)                                          \
  template Tensor<T>* add<T>(Graph<T>&, Tensor<T>*, Tensor<T>*);      \
  template Tensor<T>* add_bias<T>(Graph<T>&, Tensor<T>*, Tensor<T>*); \
  template Tensor<T>* mul<T>(Graph<T>&, Tensor<T>*, Tensor<T>*);      \
  template Tensor<T>* scale<T>(Graph<T>&, Tensor<T>*, double);        \
  template Tensor<T>* sum<T>(Graph<T>&, Tensor<T>*);
MT_AG_INSTANTIATE(float)
MT_AG_INSTANTIATE(double)

}  // namespace mt::autograd
