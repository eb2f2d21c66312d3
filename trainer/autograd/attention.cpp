// Attention forward and backward, one (sequence, head) per task. Per query
// row i with keys j < n_i (the mask) and P = softmax(scale q K^T):
//   out_i = sum_j P_ij v_j
//   dP_ij = dout_i . v_j,   dS_ij = P_ij (dP_ij - sum_j P_ij dP_ij)
//   dq_i += scale sum_j dS_ij k_j,  dk_j += scale dS_ij q_i,  dv_j += P_ij dout_i
// P [B, H, Lq, Lk] is saved for backward. Keys are transposed into a per-
// thread [dh, Lk] scratch so every inner loop is a contiguous axpy the
// compiler vectorises. Tasks write disjoint columns (heads) of disjoint rows
// (sequences), so Q, K and V may share one gradient buffer.
#include "autograd/attention.hpp"

#include <algorithm>
#include <cmath>

#include "autograd/parallel.hpp"

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

// op: in = {q tensor, kv tensor}, saved = {P}, i = {B, Lq, Lk, H, causal, C, fused},
// ints = query lengths [B] then key lengths [B]. fused: q and kv are one
// [rows, 3C] tensor (Q | K | V); else q [rows, C] and kv [rows, 2C] (K | V).
Layout layout_of(const int64_t* i, const std::vector<int>& ints) {
  Layout l{};
  l.B = int(i[0]), l.Lq = int(i[1]), l.Lk = int(i[2]), l.H = int(i[3]);
  l.causal = i[4] != 0;
  l.C = int(i[5]);
  l.dh = l.C / l.H;
  const bool fused = i[6] != 0;
  l.q_stride = size_t(fused ? 3 : 1) * l.C;
  l.kv_stride = size_t(fused ? 3 : 2) * l.C;
  l.k_off = fused ? size_t(l.C) : 0;
  l.v_off = l.k_off + size_t(l.C);
  l.q_len = ints.data();
  l.k_len = ints.data() + l.B;
  return l;
}

template <class T>
void attention_backward(Graph<T>& g, const Op<T>& op) {
  const Layout l = layout_of(op.i.data(), op.ints);
  Tensor<T>* qt = op.in[0];
  Tensor<T>* kvt = op.in[1];
  const T* P = op.saved[0]->data();
  const T* dout = op.out->grad_data();
  const T scale = T(1) / std::sqrt(T(l.dh));
  T* dq_base = qt->requires_grad ? qt->grad_data() : nullptr;
  T* dkv_base = kvt->requires_grad ? kvt->grad_data() : nullptr;
  parallel_tasks(g, l.B * l.H, [&](int task, int thread) {
    const int b = task / l.H, h = task % l.H;
    const int dh = l.dh, Lk = l.Lk;
    T* vt = g.scratch(thread, size_t(dh) * Lk + Lk);  // V^T [dh, Lk], then dP [Lk]
    T* dp = vt + size_t(dh) * Lk;
    const T* q = qt->data() + size_t(b) * l.Lq * l.q_stride + size_t(h) * dh;
    const T* k = kvt->data() + size_t(b) * Lk * l.kv_stride + l.k_off + size_t(h) * dh;
    const T* v = kvt->data() + size_t(b) * Lk * l.kv_stride + l.v_off + size_t(h) * dh;
    T* dq = dq_base ? dq_base + size_t(b) * l.Lq * l.q_stride + size_t(h) * dh : nullptr;
    T* dk = dkv_base ? dkv_base + size_t(b) * Lk * l.kv_stride + l.k_off + size_t(h) * dh : nullptr;
    T* dv = dkv_base ? dkv_base + size_t(b) * Lk * l.kv_stride + l.v_off + size_t(h) * dh : nullptr;
    const int kmax = l.q_len[b] > 0 ? std::min(Lk, l.k_len[b]) : 0;
    for (int j = 0; j < kmax; ++j)
      for (int d = 0; d < dh; ++d) vt[size_t(d) * Lk + j] = v[size_t(j) * l.kv_stride + d];
    for (int i = 0; i < l.Lq; ++i) {
      const int n = l.keys(b, i);
      if (n == 0) continue;
      const T* p = P + ((size_t(b) * l.H + h) * l.Lq + i) * Lk;
      const T* doi = dout + (size_t(b) * l.Lq + i) * l.C + size_t(h) * dh;
      const T* qi = q + size_t(i) * l.q_stride;
      std::fill(dp, dp + n, T(0));
      for (int d = 0; d < dh; ++d) {
        const T* vd = vt + size_t(d) * Lk;
        const T od = doi[d];
        for (int j = 0; j < n; ++j) dp[j] += od * vd[j];
      }
      T pdp = 0;
      for (int j = 0; j < n; ++j) pdp += p[j] * dp[j];
      for (int j = 0; j < n; ++j) {
        const T ds = scale * p[j] * (dp[j] - pdp);  // scale folded into dS
        if (dq) {
          T* dqi = dq + size_t(i) * l.q_stride;
          const T* kj = k + size_t(j) * l.kv_stride;
          for (int d = 0; d < dh; ++d) dqi[d] += ds * kj[d];
        }
        if (dk) {
          T* dkj = dk + size_t(j) * l.kv_stride;
          for (int d = 0; d < dh; ++d) dkj[d] += ds * qi[d];
        }
        if (dv) {
          T* dvj = dv + size_t(j) * l.kv_stride;
          const T pj = p[j];
          for (int d = 0; d < dh; ++d) dvj[d] += pj * doi[d];
        }
      }
    }
  });
}

// args: the op's i (see layout_of); lengths: query lengths [B] then key lengths [B].
template <class T>
Tensor<T>* attention(Graph<T>& g, Tensor<T>* qt, Tensor<T>* kvt, const int64_t* args,
                     const std::vector<int>& lengths) {
  const Layout l = layout_of(args, lengths);
  const bool rg = qt->requires_grad || kvt->requires_grad;
  Tensor<T>* out = g.make(Shape{l.B * l.Lq, l.C}, rg);
  Tensor<T>* probs = g.make(Shape{l.B, l.H, l.Lq, l.Lk}, false);
  const T scale = T(1) / std::sqrt(T(l.dh));
  parallel_tasks(g, l.B * l.H, [&](int task, int thread) {
    const int b = task / l.H, h = task % l.H;
    const int dh = l.dh, Lk = l.Lk;
    T* kt = g.scratch(thread, size_t(dh) * Lk);  // K^T [dh, Lk]
    const T* q = qt->data() + size_t(b) * l.Lq * l.q_stride + size_t(h) * dh;
    const T* k = kvt->data() + size_t(b) * Lk * l.kv_stride + l.k_off + size_t(h) * dh;
    const T* v = kvt->data() + size_t(b) * Lk * l.kv_stride + l.v_off + size_t(h) * dh;
    const int kmax = std::min(Lk, l.k_len[b]);
    for (int j = 0; j < kmax; ++j)
      for (int d = 0; d < dh; ++d) kt[size_t(d) * Lk + j] = k[size_t(j) * l.kv_stride + d];
    for (int i = 0; i < l.Lq; ++i) {
      T* p = probs->data() + ((size_t(b) * l.H + h) * l.Lq + i) * Lk;
      T* o = out->data() + (size_t(b) * l.Lq + i) * l.C + size_t(h) * dh;
      const int n = l.keys(b, i);
      std::fill(p, p + Lk, T(0));
      std::fill(o, o + dh, T(0));
      if (n == 0) continue;
      const T* qi = q + size_t(i) * l.q_stride;
      for (int d = 0; d < dh; ++d) {
        const T* kd = kt + size_t(d) * Lk;
        const T qd = qi[d];
        for (int j = 0; j < n; ++j) p[j] += qd * kd[j];
      }
      T mx = p[0] * scale;
      for (int j = 0; j < n; ++j) mx = std::max(mx, p[j] * scale);
      T s = 0;
      for (int j = 0; j < n; ++j) s += (p[j] = std::exp(p[j] * scale - mx));
      const T inv = T(1) / s;
      for (int j = 0; j < n; ++j) p[j] *= inv;
      for (int j = 0; j < n; ++j) {
        const T* vj = v + size_t(j) * l.kv_stride;
        const T pj = p[j];
        for (int d = 0; d < dh; ++d) o[d] += pj * vj[d];
      }
    }
  });
  if (rg) {
    Op<T>& op = g.record(&attention_backward<T>, out);
    op.in = {qt, kvt, nullptr, nullptr};
    op.saved[0] = probs;
    std::copy(args, args + 7, op.i.begin());
    op.ints.assign(lengths.begin(), lengths.end());
  }
  return out;
}

// Lengths of a batch, all L when not given; checked to lie in [0, L].
std::vector<int> lengths_of(const SeqBatch& s, const char* what) {
  MT_AG_CHECK(s.lengths.empty() || int(s.lengths.size()) == s.batch,
              std::string(what) + ": lengths must have one entry per sequence");
  std::vector<int> len(size_t(s.batch), s.length);
  for (int b = 0; b < int(s.lengths.size()); ++b) {
    MT_AG_CHECK(s.lengths[b] >= 0 && s.lengths[b] <= s.length,
                std::string(what) + ": a length is outside [0, L]");
    len[b] = s.lengths[b];
  }
  return len;
}

}  // namespace

template <class T>
Tensor<T>* self_attention(Graph<T>& g, Tensor<T>* qkv, const SeqBatch& seqs, int heads, bool causal) {
  MT_AG_CHECK(qkv->shape.rank == 2 && qkv->cols() % 3 == 0 && qkv->rows() == int64_t(seqs.batch) * seqs.length,
              "self_attention: qkv " + qkv->shape.str() + " is not [B*L, 3C]");
  const int C = qkv->cols() / 3;
  MT_AG_CHECK(heads > 0 && C % heads == 0, "self_attention: heads must divide C");
  std::vector<int> lengths = lengths_of(seqs, "self_attention");
  const size_t B = lengths.size();
  lengths.resize(2 * B);  // the keys are the queries
  std::copy_n(lengths.begin(), B, lengths.begin() + B);
  const int64_t args[7] = {seqs.batch, seqs.length, seqs.length, heads, causal, C, 1};
  return attention(g, qkv, qkv, args, lengths);
}

template <class T>
Tensor<T>* cross_attention(Graph<T>& g, Tensor<T>* q, const SeqBatch& queries, Tensor<T>* kv,
                           const SeqBatch& keys, int heads) {
  MT_AG_CHECK(queries.batch == keys.batch, "cross_attention: query and key batches differ");
  MT_AG_CHECK(q->shape.rank == 2 && q->rows() == int64_t(queries.batch) * queries.length,
              "cross_attention: q " + q->shape.str() + " is not [B*Lq, C]");
  const int C = q->cols();
  MT_AG_CHECK(kv->shape.rank == 2 && kv->cols() == 2 * C && kv->rows() == int64_t(keys.batch) * keys.length,
              "cross_attention: kv " + kv->shape.str() + " is not [B*Lk, 2C]");
  MT_AG_CHECK(heads > 0 && C % heads == 0, "cross_attention: heads must divide C");
  std::vector<int> lengths = lengths_of(queries, "cross_attention");
  const std::vector<int> k_len = lengths_of(keys, "cross_attention");
  lengths.insert(lengths.end(), k_len.begin(), k_len.end());
  const int64_t args[7] = {queries.batch, queries.length, keys.length, heads, 0, C, 0};
  return attention(g, q, kv, args, lengths);
}

#define MT_AG_INSTANTIATE(T)                                                                       \
  template Tensor<T>* self_attention<T>(Graph<T>&, Tensor<T>*, const SeqBatch&, int, bool);         \
  template Tensor<T>* cross_attention<T>(Graph<T>&, Tensor<T>*, const SeqBatch&, Tensor<T>*,       \
                                         const SeqBatch&, int);
MT_AG_INSTANTIATE(float)
MT_AG_INSTANTIATE(double)

}  // namespace mt::autograd
