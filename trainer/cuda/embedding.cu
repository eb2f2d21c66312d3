// Embedding lookup on the device: y[r] = scale * table[ids[r]] + pos[r % L];
// backward dtable[ids[r]] += scale * dy[r], one thread per column summing
// the rows in order (ids repeat: no two threads write one value, no atomics).
// The positions are the CPU's table (autograd::sinusoid_positions), computed
// on the host in double and uploaded, so both devices add the same floats.
#include <string>
#include <vector>

#include "autograd/embedding.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_common.cuh"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

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

// op: in = {table}, f = {scale}, i = {rows}, ints = ids
void embedding_backward(Graph& g, const Op& op) {
  Tensor* table = op.in[0];
  const int C = table->cols();
  embedding_backward_kernel<<<blocks_for(C), kThreads, 0, g.stream()>>>(table->grad, op.out->grad, op.ints, op.i[0], C,
                                                                        float(op.f[0]));
  MT_GPU_LAUNCHED();
}

}  // namespace

Tensor* embedding(Graph& g, Tensor* table, std::span<const int> ids, int L, double scale, bool add_positions) {
  MT_AG_CHECK(table->shape.rank == 2, "embedding: table must be [V, C], not " + table->shape.str());
  const int V = table->shape[0], C = table->shape[1];
  MT_AG_CHECK(L > 0 && ids.size() % size_t(L) == 0, "embedding: ids are not B rows of L");
  for (int id : ids) MT_AG_CHECK(id >= 0 && id < V, "embedding: id " + std::to_string(id) + " outside the vocabulary");
  const int rows = int(ids.size());
  Tensor* y = g.make(Shape{rows, C}, table->requires_grad);
  const int* dev_ids = g.upload_ints(ids);
  const float* pos = nullptr;
  if (add_positions) {
    std::vector<float> host(size_t(L) * C);
    sinusoid_positions(L, C, host.data());
    Tensor* t = g.make(Shape{L, C}, false);
    g.upload(t, host);
    pos = t->value;
  }
  if (rows > 0) {
    embedding_forward_kernel<<<blocks_for(int64_t(rows) * C), kThreads, 0, g.stream()>>>(
        y->value, table->value, dev_ids, pos, rows, C, L, float(scale));
    MT_GPU_LAUNCHED();
  }
  if (y->requires_grad) {
    Op& op = g.record(&embedding_backward, y);
    op.in[0] = table;
    op.f[0] = scale;
    op.i[0] = rows;
    op.ints = dev_ids;
  }
  return y;
}

}  // namespace mt::autograd::gpu
