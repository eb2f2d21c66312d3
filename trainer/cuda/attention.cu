// Masked multi-head attention on the device, the CPU's op (autograd/
// attention.cpp) with the same layouts, masks and saved P [B, H, Lq, Lk]:
//   forward, one block per (query row, head, sequence): scores, masked
//     softmax into P (zeros where masked), out = P V;
//   backward, one block per query row: dS = scale P (dP - rowsum(P dP)) with
//     dP = dO V^T (saved to a [B, H, Lq, Lk] buffer), dq += dS K;
//   then one block per key row: dk += dS^T Q, dv += P^T dO (sums over the
//     queries in order, no atomics: gradients are deterministic).
// Training lengths are short (L <= ~256): plain loops beat GEMM set-up here.
#include <algorithm>
#include <cmath>

#include "cuda/cuda_check.hpp"
#include "device_common.cuh"
#include "cuda/ops.hpp"

namespace mt::autograd::gpu {

using cuda_detail::block_max;
using cuda_detail::block_sum;

namespace {

constexpr int kAttnThreads = 128;

// Bytes of the per-row shared buffer for Lk keys. Rounded up to whole
// groups of 4 floats: ptxas may issue a loop remainder's (up to 3) loads
// together, before knowing how many are used, and compute-sanitizer caught
// it reading past an exact-size buffer on an H100.
size_t row_buffer_bytes(int Lk) { return size_t((std::max(Lk, 1) + 3) / 4 * 4) * sizeof(float); }

struct Layout {
  int B, Lq, Lk, H, dh, C;
  bool causal;
  int q_stride, kv_stride;  // row strides of the q and kv tensors
  int k_off, v_off;         // column of K and V head 0 in the kv tensor
  const int* q_len;         // device [B]
  const int* k_len;         // device [B]
  // Keys query i of sequence b sees (0 for padded query rows).
  __device__ int keys(int b, int i) const {
    if (i >= q_len[b]) return 0;
    return causal ? min(k_len[b], i + 1) : k_len[b];
  }
};

// The CPU op's layout (autograd/attention.cpp), lengths on the device.
Layout layout_of(const AttentionArgs& a, const int* lengths) {
  Layout l{};
  l.B = a.batch, l.Lq = a.query_length, l.Lk = a.key_length, l.H = a.heads;
  l.causal = a.causal;
  l.C = a.channels;
  l.dh = a.head_dim();
  l.q_stride = a.q_stride(), l.kv_stride = a.kv_stride();
  l.k_off = a.k_offset(), l.v_off = a.v_offset();
  l.q_len = lengths;
  l.k_len = lengths + l.B;
  return l;
}

__global__ void attention_forward_kernel(Layout l, const float* qt, const float* kvt, float* out, float* P,
                                         float scale) {
  extern __shared__ float p[];  // [Lk] this row's probabilities
  __shared__ float shared[32];
  const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int n = l.keys(b, i);
  float* prow = P + ((size_t(b) * l.H + h) * l.Lq + i) * l.Lk;
  float* o = out + (size_t(b) * l.Lq + i) * l.C + size_t(h) * l.dh;
  if (n == 0) {
    for (int j = threadIdx.x; j < l.Lk; j += blockDim.x) prow[j] = 0.0f;
    for (int d = threadIdx.x; d < l.dh; d += blockDim.x) o[d] = 0.0f;
    return;
  }
  const float* q = qt + (size_t(b) * l.Lq + i) * l.q_stride + size_t(h) * l.dh;
  const float* kv = kvt + size_t(b) * l.Lk * l.kv_stride + size_t(h) * l.dh;
  float mx = -INFINITY;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const float* k = kv + size_t(j) * l.kv_stride + l.k_off;
    float s = 0.0f;
    for (int d = 0; d < l.dh; ++d) s += q[d] * k[d];
    p[j] = s * scale;
    mx = fmaxf(mx, p[j]);
  }
  mx = block_max(mx, shared);
  float sum = 0.0f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) sum += (p[j] = expf(p[j] - mx));
  const float inv = 1.0f / block_sum(sum, shared);  // block_sum syncs: p is complete after it
  for (int j = threadIdx.x; j < l.Lk; j += blockDim.x) prow[j] = p[j] = j < n ? p[j] * inv : 0.0f;
  __syncthreads();
  for (int d = threadIdx.x; d < l.dh; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += p[j] * kv[size_t(j) * l.kv_stride + l.v_off + d];
    o[d] = acc;
  }
}

// dS for one query row, saved; then dq (when wanted).
__global__ void attention_query_backward_kernel(Layout l, const float* qt, const float* kvt, const float* P,
                                                const float* dout, float* dS, float* dq, float scale) {
  extern __shared__ float ds[];  // [Lk]
  __shared__ float shared[32];
  const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  // Masked entries have P = 0, hence dS = 0: every valid key of the row is
  // used, as on the CPU.
  const int n = i < l.q_len[b] ? l.k_len[b] : 0;
  const size_t row = ((size_t(b) * l.H + h) * l.Lq + i) * l.Lk;
  const float* prow = P + row;
  float* dsrow = dS + row;
  if (n == 0) {
    for (int j = threadIdx.x; j < l.Lk; j += blockDim.x) dsrow[j] = 0.0f;
    return;
  }
  const float* dO = dout + (size_t(b) * l.Lq + i) * l.C + size_t(h) * l.dh;
  const float* kv = kvt + size_t(b) * l.Lk * l.kv_stride + size_t(h) * l.dh;
  float pdp = 0.0f;
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const float* v = kv + size_t(j) * l.kv_stride + l.v_off;
    float s = 0.0f;
    for (int d = 0; d < l.dh; ++d) s += dO[d] * v[d];
    ds[j] = s;
    pdp += prow[j] * s;
  }
  pdp = block_sum(pdp, shared);
  for (int j = threadIdx.x; j < l.Lk; j += blockDim.x)
    dsrow[j] = ds[j] = j < n ? scale * prow[j] * (ds[j] - pdp) : 0.0f;
  __syncthreads();
  if (!dq) return;
  float* dqrow = dq + (size_t(b) * l.Lq + i) * l.q_stride + size_t(h) * l.dh;
  for (int d = threadIdx.x; d < l.dh; d += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n; ++j) acc += ds[j] * kv[size_t(j) * l.kv_stride + l.k_off + d];
    dqrow[d] += acc;
  }
}

// dk_j += sum_i dS_ij q_i, dv_j += sum_i P_ij dO_i for one key row j.
__global__ void attention_key_backward_kernel(Layout l, const float* qt, const float* P, const float* dS,
                                              const float* dout, float* dkv) {
  const int j = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int m = l.q_len[b];
  if (j >= l.k_len[b] || m == 0) return;
  const size_t head = (size_t(b) * l.H + h) * l.Lq * l.Lk;
  float* dk = dkv + (size_t(b) * l.Lk + j) * l.kv_stride + l.k_off + size_t(h) * l.dh;
  float* dv = dkv + (size_t(b) * l.Lk + j) * l.kv_stride + l.v_off + size_t(h) * l.dh;
  const float* q = qt + size_t(b) * l.Lq * l.q_stride + size_t(h) * l.dh;
  const float* dO = dout + size_t(b) * l.Lq * l.C + size_t(h) * l.dh;
  for (int d = threadIdx.x; d < l.dh; d += blockDim.x) {
    float ak = 0.0f, av = 0.0f;
    for (int i = 0; i < m; ++i) {
      const size_t e = head + size_t(i) * l.Lk + j;
      ak += dS[e] * q[size_t(i) * l.q_stride + d];
      av += P[e] * dO[size_t(i) * l.C + d];
    }
    dk[d] += ak;
    dv[d] += av;
  }
}

// op: in = {q tensor, kv tensor}, saved = {P}, args = AttentionArgs, ints = lengths
void attention_backward(Graph& g, const Op& op) {
  const Layout l = layout_of(std::get<AttentionArgs>(op.args), op.ints);
  Tensor* qt = op.in[0];
  Tensor* kvt = op.in[1];
  if (l.B == 0 || l.Lq == 0 || l.Lk == 0) return;
  const float scale = 1.0f / std::sqrt(float(l.dh));
  float* dS = g.scratch(size_t(l.B) * l.H * l.Lq * l.Lk);
  const size_t shared = row_buffer_bytes(l.Lk);
  attention_query_backward_kernel<<<dim3(l.Lq, l.H, l.B), kAttnThreads, shared, g.stream()>>>(
      l, qt->value, kvt->value, op.saved[0]->value, op.out->grad, dS, qt->requires_grad ? qt->grad : nullptr, scale);
  MT_GPU_LAUNCHED();
  if (kvt->requires_grad) {
    attention_key_backward_kernel<<<dim3(l.Lk, l.H, l.B), std::min(kAttnThreads, ((l.dh + 31) / 32) * 32), 0,
                                    g.stream()>>>(l, qt->value, op.saved[0]->value, dS, op.out->grad, kvt->grad);
    MT_GPU_LAUNCHED();
  }
}

Tensor* attention(Graph& g, Tensor* qt, Tensor* kvt, const AttentionArgs& args, const std::vector<int>& lengths) {
  const int* dev_lengths = g.upload_ints(lengths);
  const Layout l = layout_of(args, dev_lengths);
  const bool rg = qt->requires_grad || kvt->requires_grad;
  Tensor* out = g.make(Shape{l.B * l.Lq, l.C}, rg);
  Tensor* probs = g.make(Shape{l.B, l.H, l.Lq, l.Lk}, false);
  if (l.B > 0 && l.Lq > 0) {
    const float scale = 1.0f / std::sqrt(float(l.dh));
    attention_forward_kernel<<<dim3(l.Lq, l.H, l.B), kAttnThreads, row_buffer_bytes(l.Lk), g.stream()>>>(
        l, qt->value, kvt->value, out->value, probs->value, scale);
    MT_GPU_LAUNCHED();
  }
  if (rg) {
    Op& op = g.record(&attention_backward, out);
    op.in = {qt, kvt, nullptr, nullptr};
    op.saved[0] = probs;
    op.args = args;
    op.ints = dev_lengths;
  }
  return out;
}

}  // namespace

Tensor* self_attention(Graph& g, Tensor* qkv, const SeqBatch& seqs, int heads, bool causal) {
  const AttentionCall call = self_attention_args(qkv->shape, seqs, heads, causal);
  return attention(g, qkv, qkv, call.args, call.lengths);
}

Tensor* cross_attention(Graph& g, Tensor* q, const SeqBatch& queries, Tensor* kv, const SeqBatch& keys, int heads) {
  const AttentionCall call = cross_attention_args(q->shape, queries, kv->shape, keys, heads);
  return attention(g, q, kv, call.args, call.lengths);
}

}  // namespace mt::autograd::gpu
