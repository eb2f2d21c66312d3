// The recorded graph (tape) of reverse-mode automatic differentiation.
//
// A Graph<T> owns every tensor: parameters, which live as long as the graph,
// and the inputs and intermediate results of one training step. Each op
// (linear.hpp, norm.hpp, attention.hpp, ...) computes its forward result at
// once and appends an Op to the tape holding what its backward needs.
// backward(loss) runs the tape in reverse; every backward accumulates (+=)
// into the gradients of its inputs, so a tensor used twice (a residual, a
// tied embedding) sums the gradients of both uses (an op may instead write
// an input's gradient on its first use: Op::writes_fresh). clear() drops
// the step's tensors and ops but keeps their buffers for the next step,
// which usually has the same structure, so a steady training loop stops
// allocating.
//
// T is float for training (the platforms GEMM, multi-threaded) or double for
// gradient checks (plain loops); both are instantiated in graph.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autograd/op_args.hpp"
#include "autograd/tensor.hpp"

namespace mt {
struct KernelTable;
namespace detail {
class ThreadPool;
}
}  // namespace mt

namespace mt::autograd {

template <class T>
class Graph;

// One recorded op: its backward and what the forward saved for it.
template <class T>
struct Op {
  using Backward = void (*)(Graph<T>& g, const Op& op);
  Backward backward = nullptr;
  Tensor<T>* out = nullptr;
  std::array<Tensor<T>*, 4> in{};     // inputs that may need gradients (null: unused)
  std::array<Tensor<T>*, 3> saved{};  // buffers saved by the forward (no gradients)
  OpArgs args;                        // sizes, flags and factors (op_args.hpp)
  std::vector<int> ints;              // token ids, targets, lengths (capacity kept across steps)
  // writes_fresh[i]: the backward writes (=), not adds, the whole gradient
  // of in[i] when its grad_pending is still set (its first use in reverse),
  // so backward() does not zero that gradient first: a step's largest
  // gradients (the logits', [tokens, vocabulary]) were written twice. Mark
  // one position per tensor: the same tensor at an unmarked position is
  // zeroed there and reaches the op no longer pending (matmul(y, y)). An op
  // may mark a tensor at two positions only where it writes each of the
  // tensor's values once across them (self-attention's q, k, v columns).
  std::array<bool, 4> writes_fresh{};
};

// Where the dropout stream stands: masks depend only on (seed, calls), so
// restoring a state replays the same masks (gradient checks, resumed runs).
struct RngState {
  uint64_t seed = 0;
  uint64_t calls = 0;  // dropout ops recorded since the seed was set
};

template <class T>
class Graph {
 public:
  // num_threads counts the calling thread; 1 runs everything on the caller.
  explicit Graph(int num_threads = 1);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A trainable tensor, zero-initialised (the caller fills value); kept by
  // clear(). Its gradient accumulates over backward calls until zero_grad().
  Tensor<T>* parameter(std::string name, Shape shape);
  // A constant of this step (no gradient), zero-filled or copied from data.
  Tensor<T>* input(Shape shape);
  Tensor<T>* input(Shape shape, std::span<const T> data);

  const std::vector<Tensor<T>*>& parameters() const { return param_list_; }
  void zero_grad();

  // Reverse pass from a one-element loss, seeded with d loss = seed.
  // Accumulates (+=) into parameter gradients.
  void backward(Tensor<T>* loss, T seed = T(1));

  // Drops the step's tensors and ops (their pointers become invalid) and
  // keeps parameters and all buffers.
  void clear();

  // Dropout is the identity when training is off (inference); on by default.
  void set_training(bool training) { training_ = training; }
  bool training() const { return training_; }
  void set_seed(uint64_t seed) { rng_ = RngState{seed, 0}; }
  RngState rng_state() const { return rng_; }
  void set_rng_state(RngState s) { rng_ = s; }

  // --- for op implementations ---
  // A fresh tensor of this step; requires_grad as given (its gradient buffer
  // is sized by backward). Buffers are reused from earlier steps.
  Tensor<T>* make(Shape shape, bool requires_grad);
  // Appends an op to the tape; the caller fills the returned record.
  Op<T>& record(typename Op<T>::Backward backward, Tensor<T>* out);
  // Index of the next dropout stream, advancing the state.
  uint64_t next_dropout_stream() { return rng_.calls++; }

  detail::ThreadPool& pool() { return *pool_; }
  int num_threads() const;
  const KernelTable& kernels() const { return *kernels_; }
  // Per-thread scratch of at least n values (thread < num_threads()), kept across calls.
  T* scratch(int thread, size_t n);
  // Scratch for packed GEMM operands (float), kept across calls.
  std::vector<float>& pack_buffer() { return pack_; }

  size_t op_count() const { return ops_used_; }
  size_t tensor_count() const { return temps_used_; }

 private:
  std::unique_ptr<detail::ThreadPool> pool_;
  const KernelTable* kernels_;
  std::vector<std::unique_ptr<Tensor<T>>> params_;
  std::vector<Tensor<T>*> param_list_;
  std::vector<std::unique_ptr<Tensor<T>>> temps_;  // [0, temps_used_) live this step
  size_t temps_used_ = 0;
  std::vector<Op<T>> ops_;  // [0, ops_used_) the tape
  size_t ops_used_ = 0;
  std::vector<std::vector<T>> scratch_;
  std::vector<float> pack_;
  bool training_ = true;
  RngState rng_;
};

extern template class Graph<float>;
extern template class Graph<double>;

}  // namespace mt::autograd
