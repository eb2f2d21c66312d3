// Embedding lookup on the device: y[r] = scale * table[ids[r]] + pos[r % L];
// backward dtable[ids[r]] += scale * dy[r], one thread per column summing
// the rows in order (ids repeat: no two threads write one value, no atomics).
// The positions are the CPU's table (autograd::sinusoid_positions), computed
// on the host in double and uploaded, so both devices add the same floats.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/embedding.hpp"
#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::blocks_for;
using cuda_detail::kElementThreads;

namespace {

__global__ void embedding_forward_kernel(float* y, const float* table, const int* ids, const float* pos, int64_t rows,
                                         int C, int L, float s) {
  MT_GPU_FOR(e, rows * C) {
    const int64_t r = e / C;
    const int c = int(e % C);
    float v = table[int64_t(ids[r]) * C + c] * s;
    if (pos) v += pos[(r % L) * C + c];
    y[e] = v;
  }
}

__global__ void embedding_backward_kernel(float* dtable, const float* dy, const int* ids, int64_t rows, int C,
                                          float s) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  for (int64_t r = 0; r < rows; ++r) dtable[int64_t(ids[r]) * C + c] += s * dy[r * C + c];
}

// op: in = {table}, args = EmbeddingArgs, ints = ids
void embedding_backward(Graph& g, const Op& op) {
  const EmbeddingArgs& args = std::get<EmbeddingArgs>(op.args);
  Tensor* table = op.in[0];
  const int C = table->cols();
  embedding_backward_kernel<<<blocks_for(C), kElementThreads, 0, g.stream()>>>(table->grad, op.out->grad, op.ints,
                                                                               args.rows, C, float(args.scale));
  MT_GPU_LAUNCHED();
}

}  // namespace

Tensor* embedding(Graph& g, Tensor* table, std::span<const int> ids, int L, double scale, bool add_positions,
                  std::span<const float> stored) {
  const EmbeddingArgs args = embedding_args(table->shape, ids, L, scale);
  const int C = args.channels, rows = args.rows;
  Tensor* y = g.make(Shape{rows, C}, table->requires_grad);
  const int* dev_ids = g.upload_ints(ids);
  const float* pos = nullptr;
  if (add_positions) {
    std::vector<float> host(size_t(L) * C);
    if (stored.empty()) {
      sinusoid_positions(L, C, host.data());
    } else {
      if (stored.size() < host.size())
        throw std::invalid_argument("a sentence of " + std::to_string(L) + " positions: longer than the model's table");
      std::copy(stored.begin(), stored.begin() + ptrdiff_t(host.size()), host.begin());
    }
    Tensor* t = g.make(Shape{L, C}, false);
    g.upload(t, host);
    pos = t->value;
  }
  if (rows > 0) {
    embedding_forward_kernel<<<blocks_for(int64_t(rows) * C), kElementThreads, 0, g.stream()>>>(
        y->value, table->value, dev_ids, pos, rows, C, L, float(scale));
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) {
    Op& op = g.record(&embedding_backward, y);
    op.in[0] = table;
    op.args = args;
    op.ints = dev_ids;
  }
  return y;
}

}  // namespace mt::autograd::gpu
