// The tape: tensor recycling across steps and the reverse pass.
#include "autograd/graph.hpp"

#include <algorithm>

#include "autograd/parallel.hpp"
#include "mt/kernels.h"
#include "support/thread_pool.hpp"

namespace mt::autograd {

template <class T>
Graph<T>::Graph(int num_threads)
    : pool_(std::make_unique<detail::ThreadPool>(std::max(1, num_threads))),
      kernels_(&best_kernels()),
      scratch_(size_t(std::max(1, num_threads))) {}

template <class T>
Graph<T>::~Graph() = default;

template <class T>
int Graph<T>::num_threads() const {
  return pool_->size();
}

template <class T>
Tensor<T>* Graph<T>::parameter(std::string name, Shape shape) {
  auto t = std::make_unique<Tensor<T>>();
  t->shape = shape;
  t->value.assign(size_t(shape.numel()), T(0));
  t->grad.assign(size_t(shape.numel()), T(0));
  t->requires_grad = true;
  t->is_parameter = true;
  t->name = std::move(name);
  param_list_.push_back(t.get());
  params_.push_back(std::move(t));
  return param_list_.back();
}

template <class T>
Tensor<T>* Graph<T>::make(Shape shape, bool requires_grad) {
  if (temps_used_ == temps_.size()) temps_.push_back(std::make_unique<Tensor<T>>());
  Tensor<T>* t = temps_[temps_used_++].get();
  t->shape = shape;
  // resize, not assign: ops overwrite every value, and resize keeps capacity.
  t->value.resize(size_t(shape.numel()));
  t->requires_grad = requires_grad;
  return t;
}

template <class T>
Tensor<T>* Graph<T>::input(Shape shape) {
  Tensor<T>* t = make(shape, false);
  std::fill(t->value.begin(), t->value.end(), T(0));
  return t;
}

template <class T>
Tensor<T>* Graph<T>::input(Shape shape, std::span<const T> data) {
  MT_AG_CHECK(int64_t(data.size()) == shape.numel(), "input: data size does not match " + shape.str());
  Tensor<T>* t = make(shape, false);
  std::copy(data.begin(), data.end(), t->value.begin());
  return t;
}

template <class T>
Op<T>& Graph<T>::record(typename Op<T>::Backward backward, Tensor<T>* out) {
  if (ops_used_ == ops_.size()) ops_.emplace_back();
  Op<T>& op = ops_[ops_used_++];
  op.backward = backward;
  op.out = out;
  op.in.fill(nullptr);
  op.saved.fill(nullptr);
  op.args = std::monostate{};
  op.ints.clear();
  op.writes_fresh.fill(false);
  return op;
}

template <class T>
void Graph<T>::zero_grad() {
  for (Tensor<T>* p : param_list_) std::fill(p->grad.begin(), p->grad.end(), T(0));
}

template <class T>
void Graph<T>::backward(Tensor<T>* loss, T seed) {
  MT_AG_CHECK(loss->numel() == 1, "backward: the loss must have one element, not " + loss->shape.str());
  // Gradients of this step's tensors start at zero; parameters keep theirs.
  // Each is sized here and zeroed (over the pool) just before the first op
  // that uses it: ops only add into the gradients of their inputs (op.in)
  // and read their output's, and they run in reverse, so a tensor's zeros
  // are written when its last consumer runs and are still in cache when it
  // adds into them. Zeroing all of them first (hundreds of MB a step, the
  // logits' included) wrote them to memory to be read back. An op that
  // writes its inputs' fresh gradients (Op::writes_fresh) gets them
  // unzeroed, grad_pending still set.
  for (size_t t = 0; t < temps_used_; ++t) {
    Tensor<T>& x = *temps_[t];
    x.grad_pending = x.requires_grad;
    if (x.requires_grad) x.grad.resize(x.value.size());
  }
  auto zero = [this](Tensor<T>* x) {
    if (x == nullptr || !x->grad_pending) return;
    T* grad = x->grad.data();
    parallel_range(*this, int64_t(x->grad.size()), int64_t(1) << 16,
                   [&](int64_t b, int64_t e, int) { std::fill(grad + b, grad + e, T(0)); });
    x->grad_pending = false;
  };
  if (loss->requires_grad) {  // else nothing depends on a parameter
    zero(loss);
    loss->grad[0] += seed;
    for (size_t k = ops_used_; k-- > 0;) {
      const Op<T>& op = ops_[k];
      if (!op.out->requires_grad) continue;
      zero(op.out);
      for (size_t i = 0; i < op.in.size(); ++i)
        if (!op.writes_fresh[i]) zero(op.in[i]);
      op.backward(*this, op);
      for (Tensor<T>* x : op.in)
        if (x) x->grad_pending = false;
    }
  }
  for (size_t t = 0; t < temps_used_; ++t) zero(temps_[t].get());  // results the loss does not use
}

template <class T>
void Graph<T>::clear() {
  temps_used_ = 0;
  ops_used_ = 0;
}

template <class T>
T* Graph<T>::scratch(int thread, size_t n) {
  std::vector<T>& s = scratch_[size_t(thread)];
  if (s.size() < n) s.resize(n);
  return s.data();
}

template class Graph<float>;
template class Graph<double>;

}  // namespace mt::autograd
