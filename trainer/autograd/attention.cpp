// Attention forward and backward, one (sequence, head) per task. Per query
// row i with keys j < n_i (the mask) and P = softmax(scale q K^T):
//   out_i = sum_j P_ij v_j
//   dP_ij = dout_i . v_j,   dS_ij = P_ij (dP_ij - sum_j P_ij dP_ij)
//   dq_i += scale sum_j dS_ij k_j,  dk_j += scale dS_ij q_i,  dv_j += P_ij dout_i
// P [B, H, Lq, Lk] is saved for backward. Each product is a small GEMM on
// the head's strided rows (gemm.hpp: the platforms kernel for float), the
// softmax the platforms kernel too. Tasks write disjoint columns (heads) of
// disjoint rows (sequences), so Q, K and V may share one gradient buffer.
#include "autograd/attention.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/gemm.hpp"
#include "autograd/parallel.hpp"
#include "mt/kernels.h"

namespace mt::autograd {

namespace {

// Where one call reads its heads from.
struct Layout {
  int B, Lq, Lk, H, dh, C;
  bool causal;
  size_t q_stride, kv_stride;  // row strides of the q and kv tensors
  size_t k_off, v_off;         // column of K and V head 0 in the kv tensor
  const int* q_len;            // [B]
  const int* k_len;            // [B]
  // Keys query i of sequence b sees (0 for padded query rows).
  int keys(int b, int i) const {
    if (i >= q_len[b]) return 0;
    return causal ? std::min(k_len[b], i + 1) : k_len[b];
  }
};

// op: in = {q tensor, kv tensor}, saved = {P}, args = AttentionArgs,
// ints = query lengths [B] then key lengths [B].
Layout layout_of(const AttentionArgs& a, const std::vector<int>& ints) {
  Layout l{};
  l.B = a.batch, l.Lq = a.query_length, l.Lk = a.key_length, l.H = a.heads;
  l.causal = a.causal;
  l.C = a.channels;
  l.dh = a.head_dim();
  l.q_stride = size_t(a.q_stride()), l.kv_stride = size_t(a.kv_stride());
  l.k_off = size_t(a.k_offset()), l.v_off = size_t(a.v_offset());
  l.q_len = ints.data();
  l.k_len = ints.data() + l.B;
  return l;
}

// Rows of one (sequence, head): q_rows valid queries, k_rows valid keys, and
// where its Q, K, V (and their gradients) start.
template <class T>
struct Head {
  int q_rows, k_rows;
  size_t q, k, v;  // offsets of the head's first row in the q and kv tensors
};

template <class T>
Head<T> head_of(const Layout& l, int b, int h) {
  const size_t kv = size_t(b) * l.Lk * l.kv_stride + size_t(h) * l.dh;
  return Head<T>{l.q_len[b], l.q_len[b] > 0 ? l.k_len[b] : 0, size_t(b) * l.Lq * l.q_stride + size_t(h) * l.dh,
                 kv + l.k_off, kv + l.v_off};
}

// Scratch of one task: GEMM packing plus two [Lq, Lk] matrices.
inline size_t attention_scratch(const Layout& l) {
  const size_t pack = std::max({gemm_pack_size(l.Lk, l.dh), gemm_pack_size(l.dh, l.Lk), gemm_pack_size(l.dh, l.Lq)});
  return pack + 2 * size_t(l.Lq) * l.Lk;
}

// In place over p[0, n): softmax(scale * p), then zeros up to Lk.
void softmax_row(const Graph<float>& g, float* p, int n, int Lk, float scale) {
  for (int j = 0; j < n; ++j) p[j] *= scale;
  g.kernels().softmax_f32(p, n);
  std::fill(p + n, p + Lk, 0.0f);
}

void softmax_row(const Graph<double>&, double* p, int n, int Lk, double scale) {
  double mx = p[0] * scale;
  for (int j = 0; j < n; ++j) mx = std::max(mx, p[j] * scale);
  double s = 0;
  for (int j = 0; j < n; ++j) s += (p[j] = std::exp(p[j] * scale - mx));
  for (int j = 0; j < n; ++j) p[j] /= s;
  std::fill(p + n, p + Lk, 0.0);
}

// Per (sequence, head), with masked probabilities stored as zeros:
//   dP = dO V^T,  dS = scale P (dP - rowsum(P dP)),  dQ += dS K,  dK += dS^T Q,  dV += P^T dO.
// Masked entries have P = 0, hence dS = 0: the products run over all valid
// keys of the head without per-row bounds.
template <class T>
void attention_backward(Graph<T>& g, const Op<T>& op) {
  const Layout l = layout_of(std::get<AttentionArgs>(op.args), op.ints);
  Tensor<T>* qt = op.in[0];
  Tensor<T>* kvt = op.in[1];
  const T* P = op.saved[0]->data();
  const T* dout = op.out->grad_data();
  const T scale = T(1) / std::sqrt(T(l.dh));
  T* dq_base = qt->requires_grad ? qt->grad_data() : nullptr;
  T* dkv_base = kvt->requires_grad ? kvt->grad_data() : nullptr;
  // A gradient on its first use (Op::writes_fresh, both positions: the
  // heads' q, k and v columns cover the q and kv tensors, one tensor or
  // two) is written, not added: the GEMMs with accumulate off on each
  // head's valid rows, zeros on its padded rows.
  const bool q_fresh = dq_base && qt->grad_pending, kv_fresh = dkv_base && kvt->grad_pending;
  const size_t pack = attention_scratch(l) - 2 * size_t(l.Lq) * l.Lk;
  parallel_tasks(g, l.B * l.H, [&](int task, int thread) {
    const int b = task / l.H, h = task % l.H;
    const Head<T> hd = head_of<T>(l, b, h);
    const int M = hd.q_rows, N = hd.k_rows, dh = l.dh, Lk = l.Lk;
    const int q_valid = M == 0 || N == 0 ? 0 : M, k_valid = M == 0 || N == 0 ? 0 : N;
    auto zero_rows = [dh](T* first, size_t stride, int r0, int r1) {
      for (int r = r0; r < r1; ++r) std::fill(first + size_t(r) * stride, first + size_t(r) * stride + dh, T(0));
    };
    if (q_fresh) zero_rows(dq_base + hd.q, l.q_stride, q_valid, l.Lq);
    if (kv_fresh) {
      zero_rows(dkv_base + hd.k, l.kv_stride, k_valid, Lk);
      zero_rows(dkv_base + hd.v, l.kv_stride, k_valid, Lk);
    }
    if (M == 0 || N == 0) return;
    T* scratch = g.scratch(thread, attention_scratch(l));
    T* ds = scratch + pack;             // [M, N] dP, then dS
    T* trans = ds + size_t(l.Lq) * Lk;  // [N, M] dS^T or P^T
    const T* p = P + (size_t(b) * l.H + h) * l.Lq * Lk;
    const T* q = qt->data() + hd.q;
    const T* k = kvt->data() + hd.k;
    const T* v = kvt->data() + hd.v;
    const T* dO = dout + size_t(b) * l.Lq * l.C + size_t(h) * dh;
    gemm_serial(g, scratch, M, N, dh, dO, size_t(l.C), v, l.kv_stride, BLayout::nk, static_cast<const T*>(nullptr), ds,
                size_t(N), false);
    for (int i = 0; i < M; ++i) {
      const T* pi = p + size_t(i) * Lk;
      T* di = ds + size_t(i) * N;
      T pdp = 0;
      for (int j = 0; j < N; ++j) pdp += pi[j] * di[j];
      for (int j = 0; j < N; ++j) di[j] = scale * pi[j] * (di[j] - pdp);
    }
    if (dq_base) {
      gemm_serial(g, scratch, M, dh, N, ds, size_t(N), k, l.kv_stride, BLayout::kn, static_cast<const T*>(nullptr),
                  dq_base + hd.q, l.q_stride, !q_fresh);
    }
    if (dkv_base) {
      transpose(ds, M, N, size_t(N), trans);
      gemm_serial(g, scratch, N, dh, M, trans, size_t(M), q, l.q_stride, BLayout::kn, static_cast<const T*>(nullptr),
                  dkv_base + hd.k, l.kv_stride, !kv_fresh);
      transpose(p, M, N, size_t(Lk), trans);
      gemm_serial(g, scratch, N, dh, M, trans, size_t(M), dO, size_t(l.C), BLayout::kn, static_cast<const T*>(nullptr),
                  dkv_base + hd.v, l.kv_stride, !kv_fresh);
    }
  });
}

// Per (sequence, head): S = Q K^T over the valid rows and keys, P = the
// masked softmax of scale S row by row (saved, zeros where masked), O = P V.
// Rows past the sequence's queries output zeros.
// lengths: query lengths [B] then key lengths [B].
template <class T>
Tensor<T>* attention(Graph<T>& g, Tensor<T>* qt, Tensor<T>* kvt, const AttentionArgs& args,
                     const std::vector<int>& lengths) {
  const Layout l = layout_of(args, lengths);
  const bool rg = qt->requires_grad || kvt->requires_grad;
  Tensor<T>* out = g.make(Shape{l.B * l.Lq, l.C}, rg);
  Tensor<T>* probs = g.make(Shape{l.B, l.H, l.Lq, l.Lk}, false);
  const T scale = T(1) / std::sqrt(T(l.dh));
  parallel_tasks(g, l.B * l.H, [&](int task, int thread) {
    const int b = task / l.H, h = task % l.H;
    const Head<T> hd = head_of<T>(l, b, h);
    const int M = hd.q_rows, N = hd.k_rows, dh = l.dh, Lk = l.Lk;
    T* p = probs->data() + (size_t(b) * l.H + h) * l.Lq * Lk;
    T* o = out->data() + size_t(b) * l.Lq * l.C + size_t(h) * dh;
    std::fill(p + size_t(M) * Lk, p + size_t(l.Lq) * Lk, T(0));
    for (int i = (N == 0 ? 0 : M); i < l.Lq; ++i) std::fill(o + size_t(i) * l.C, o + size_t(i) * l.C + dh, T(0));
    if (M == 0 || N == 0) {
      std::fill(p, p + size_t(l.Lq) * Lk, T(0));
      return;
    }
    T* scratch = g.scratch(thread, attention_scratch(l));
    gemm_serial(g, scratch, M, N, dh, qt->data() + hd.q, l.q_stride, kvt->data() + hd.k, l.kv_stride, BLayout::nk,
                static_cast<const T*>(nullptr), p, size_t(Lk), false);
    for (int i = 0; i < M; ++i) softmax_row(g, p + size_t(i) * Lk, l.keys(b, i), Lk, scale);
    gemm_serial(g, scratch, M, dh, N, p, size_t(Lk), kvt->data() + hd.v, l.kv_stride, BLayout::kn,
                static_cast<const T*>(nullptr), o, size_t(l.C), false);
  });
  if (rg) {
    Op<T>& op = g.record(&attention_backward<T>, out);
    op.in = {qt, kvt, nullptr, nullptr};
    op.saved[0] = probs;
    op.args = args;
    op.writes_fresh = {true, true, false, false};  // attention_backward; fused qkv: one tensor, written once
    op.ints.assign(lengths.begin(), lengths.end());
  }
  return out;
}

}  // namespace

template <class T>
Tensor<T>* self_attention(Graph<T>& g, Tensor<T>* qkv, const SeqBatch& seqs, int heads, bool causal) {
  const AttentionCall call = self_attention_args(qkv->shape, seqs, heads, causal);
  return attention(g, qkv, qkv, call.args, call.lengths);
}

template <class T>
Tensor<T>* cross_attention(Graph<T>& g, Tensor<T>* q, const SeqBatch& queries, Tensor<T>* kv, const SeqBatch& keys,
                           int heads) {
  const AttentionCall call = cross_attention_args(q->shape, queries, kv->shape, keys, heads);
  return attention(g, q, kv, call.args, call.lengths);
}

#define MT_AG_INSTANTIATE(T)                                                                \
  template Tensor<T>* self_attention<T>(Graph<T>&, Tensor<T>*, const SeqBatch&, int, bool); \
  template Tensor<T>* cross_attention<T>(Graph<T>&, Tensor<T>*, const SeqBatch&, Tensor<T>*, const SeqBatch&, int);
MT_AG_INSTANTIATE(float)
MT_AG_INSTANTIATE(double)

}  // namespace mt::autograd
