// Embedding lookup: forward y[r] = scale * table[ids[r]] + pos[r % L],
// backward dtable[ids[r]] += scale * dy[r] (a scatter-add).
#include "autograd/embedding.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "autograd/parallel.hpp"

namespace mt::autograd {

namespace {

// op: in = {table}, args = EmbeddingArgs, ints = ids
template <class T>
void embedding_backward(Graph<T>& g, const Op<T>& op) {
  Tensor<T>* table = op.in[0];
  const int C = table->cols();
  const T s = T(std::get<EmbeddingArgs>(op.args).scale);
  const T* dy = op.out->grad_data();
  const std::vector<int>& ids = op.ints;
  // Ids repeat, so split by columns: no two tasks write the same value, and
  // each value sums its rows in order whatever the thread count.
  parallel_range(g, C, 32, [&](int64_t c0, int64_t c1, int) {
    for (size_t r = 0; r < ids.size(); ++r) {
      T* dt = table->grad_data() + size_t(ids[r]) * C;
      const T* d = dy + r * C;
      for (int64_t c = c0; c < c1; ++c) dt[c] += s * d[c];
    }
  });
}

}  // namespace

template <class T>
void sinusoid_positions(int P, int C, T* positions) {
  for (int p = 0; p < P; ++p) {
    for (int i = 0; i < C; i += 2) {
      const double angle = double(p) / std::pow(10000.0, double(i) / double(C));
      positions[size_t(p) * C + i] = T(std::sin(angle));
      if (i + 1 < C) positions[size_t(p) * C + i + 1] = T(std::cos(angle));
    }
  }
}

template <class T>
Tensor<T>* embedding(Graph<T>& g, Tensor<T>* table, std::span<const int> ids, int L, double scale, bool add_positions,
                     std::span<const float> stored) {
  const EmbeddingArgs args = embedding_args(table->shape, ids, L, scale);
  const int C = args.channels, rows = args.rows;
  Tensor<T>* y = g.make(Shape{rows, C}, table->requires_grad);
  T* pos = nullptr;
  if (add_positions) {
    pos = g.scratch(0, size_t(L) * C);
    if (stored.empty()) {
      sinusoid_positions(L, C, pos);
    } else {
      if (stored.size() < size_t(L) * C)
        throw std::invalid_argument("a sentence of " + std::to_string(L) + " positions: longer than the model's table");
      std::copy(stored.begin(), stored.begin() + ptrdiff_t(size_t(L) * C), pos);
    }
  }
  const T s = T(scale);
  parallel_range(g, rows, 64, [&](int64_t r0, int64_t r1, int) {
    for (int64_t r = r0; r < r1; ++r) {
      const T* e = table->data() + size_t(ids[r]) * C;
      T* yr = y->data() + r * C;
      for (int c = 0; c < C; ++c) yr[c] = e[c] * s;
      if (pos) accumulate(yr, pos + (r % L) * C, C);
    }
  });
  if (y->requires_grad) {
    Op<T>& op = g.record(&embedding_backward<T>, y);
    op.in[0] = table;
    op.args = args;
    op.ints.assign(ids.begin(), ids.end());
  }
  return y;
}

template void sinusoid_positions<float>(int, int, float*);
template void sinusoid_positions<double>(int, int, double*);
template Tensor<float>* embedding<float>(Graph<float>&, Tensor<float>*, std::span<const int>, int, double, bool,
                                         std::span<const float>);
template Tensor<double>* embedding<double>(Graph<double>&, Tensor<double>*, std::span<const int>, int, double, bool,
                                           std::span<const float>);

}  // namespace mt::autograd
