// Label-smoothed cross-entropy on the device (formulas in autograd/loss.cpp):
// one block per row computes lse, -log p[t] and -mean log p; the host sums
// the rows in double in row order, as the CPU does. Backward recomputes p
// from the logits and the saved lse, reading d loss on the device.
#include <string>
#include <vector>

#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::block_max;
using cuda_detail::block_sum;
using cuda_detail::kElementThreads;

namespace {

// rows: [2N], -log p[t] then -mean log p; 0 on padding.
__global__ void cross_entropy_forward_kernel(float* lse, float* rows, const float* logits, const int* targets, int pad,
                                             int64_t N, int V) {
  __shared__ float shared[32];
  const int64_t r = blockIdx.x;
  const float* z = logits + r * V;
  if (targets[r] == pad) {
    if (threadIdx.x == 0) lse[r] = rows[r] = rows[N + r] = 0.0f;
    return;
  }
  float mx = -INFINITY;
  for (int v = threadIdx.x; v < V; v += blockDim.x) mx = fmaxf(mx, z[v]);
  mx = block_max(mx, shared);
  float s = 0.0f, zsum = 0.0f;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    s += expf(z[v] - mx);
    zsum += z[v];
  }
  s = block_sum(s, shared);
  zsum = block_sum(zsum, shared);
  if (threadIdx.x == 0) {
    const float l = mx + logf(s);
    lse[r] = l;
    rows[r] = l - z[targets[r]];
    rows[N + r] = l - zsum / float(V);
  }
}

// dz[v] += dl p[v] - dl eps / V, and -dl (1 - eps) at the target.
__global__ void cross_entropy_backward_kernel(float* dlogits, const float* logits, const float* lse, const int* targets,
                                              const float* dloss, int pad, int V, float eps) {
  const int64_t r = blockIdx.x;
  const int t = targets[r];
  if (t == pad) return;
  const float dl = dloss[0];
  const float off = dl * eps / float(V);
  const float* z = logits + r * V;
  float* dz = dlogits + r * V;
  for (int v = threadIdx.x; v < V; v += blockDim.x) {
    float d = dl * expf(z[v] - lse[r]) - off;
    if (v == t) d -= dl * (1.0f - eps);
    dz[v] += d;
  }
}

// op: in = {logits}, saved = {lse}, args = CrossEntropyArgs, ints = targets
void cross_entropy_backward(Graph& g, const Op& op) {
  const CrossEntropyArgs& args = std::get<CrossEntropyArgs>(op.args);
  Tensor* logits = op.in[0];
  if (logits->rows() == 0) return;
  cross_entropy_backward_kernel<<<unsigned(logits->rows()), kElementThreads, 0, g.stream()>>>(
      logits->grad, logits->value, op.saved[0]->value, op.ints, op.out->grad, args.pad_id, logits->cols(),
      float(args.label_smoothing));
  MT_GPU_LAUNCHED();
}

}  // namespace

CrossEntropy cross_entropy(Graph& g, Tensor* logits, std::span<const int> targets, int pad_id, double label_smoothing) {
  const CrossEntropyArgs args = cross_entropy_args(logits->shape, targets, pad_id, label_smoothing);
  const int V = logits->cols();
  const int64_t N = logits->rows();
  const int* dev_targets = g.upload_ints(targets);
  Tensor* lse = g.make(Shape{int(N)}, false);
  Tensor* rows = g.make(Shape{int(2 * N)}, false);
  if (N > 0) {
    cross_entropy_forward_kernel<<<unsigned(N), kElementThreads, 0, g.stream()>>>(
        lse->value, rows->value, logits->value, dev_targets, pad_id, N, V);
    MT_GPU_LAUNCHED();
  }
  const std::vector<float> host = g.download(rows);
  CrossEntropy result;
  double smooth = 0.0;
  for (int64_t r = 0; r < N; ++r) {
    if (targets[r] == pad_id) continue;
    ++result.tokens;
    result.nll += double(host[size_t(r)]);
    smooth += double(host[size_t(N + r)]);
  }
  result.value = double(float((1.0 - label_smoothing) * result.nll + label_smoothing * smooth));
  result.loss = g.make(Shape{1}, logits->requires_grad);
  const float loss_value = float(result.value);
  g.upload(result.loss, std::span<const float>(&loss_value, 1));
  if (logits->requires_grad) {
    Op& op = g.record(&cross_entropy_backward, result.loss);
    op.in[0] = logits;
    op.saved[0] = lse;
    op.args = args;
    op.ints = dev_targets;
  }
  return result;
}

}  // namespace mt::autograd::gpu
