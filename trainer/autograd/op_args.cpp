#include "autograd/op_args.hpp"

#include <algorithm>
#include <string>

#include "autograd/attention.hpp"  // SeqBatch

namespace mt::autograd {

MatmulArgs linear_args(const Shape& x, const Shape& w, const Shape* bias) {
  MT_AG_CHECK(w.rank == 2, "linear: weight must be [out, in], not " + w.str());
  const int N = w[0], K = w[1];
  MT_AG_CHECK(x.cols() == K, "linear: input " + x.str() + " does not match weight " + w.str());
  MT_AG_CHECK(!bias || bias->numel() == N, "linear: bias " + (bias ? bias->str() : "") + " for " + w.str());
  MatmulArgs a{int(x.rows()), N, K, true, x};
  a.out.dims[a.out.rank - 1] = N;
  return a;
}

MatmulArgs matmul_args(const Shape& a, const Shape& b, bool trans_b) {
  MT_AG_CHECK(a.rank == 2 && b.rank == 2, "matmul: operands must be matrices");
  const int M = a[0], K = a[1];
  const int N = trans_b ? b[0] : b[1];
  MT_AG_CHECK((trans_b ? b[1] : b[0]) == K, "matmul: " + a.str() + " by " + b.str() + (trans_b ? "^T" : ""));
  return MatmulArgs{M, N, K, trans_b, Shape{M, N}};
}

BatchedMatmulArgs batched_matmul_args(const Shape& a, const Shape& b, bool trans_b) {
  MT_AG_CHECK(a.rank == 3 && b.rank == 3 && a[0] == b[0],
              "batched_matmul: operands must be [Bt, ., .] with the same Bt");
  const int M = a[1], K = a[2];
  const int N = trans_b ? b[1] : b[2];
  MT_AG_CHECK((trans_b ? b[2] : b[1]) == K, "batched_matmul: " + a.str() + " by " + b.str() + (trans_b ? "^T" : ""));
  return BatchedMatmulArgs{a[0], M, N, K, trans_b};
}

namespace {

// Lengths of a batch, all L when not given; checked to lie in [0, L].
std::vector<int> lengths_of(const SeqBatch& s, const char* what) {
  MT_AG_CHECK(s.lengths.empty() || int(s.lengths.size()) == s.batch,
              std::string(what) + ": lengths must have one entry per sequence");
  std::vector<int> len(size_t(s.batch), s.length);
  for (int b = 0; b < int(s.lengths.size()); ++b) {
    MT_AG_CHECK(s.lengths[b] >= 0 && s.lengths[b] <= s.length, std::string(what) + ": a length is outside [0, L]");
    len[b] = s.lengths[b];
  }
  return len;
}

}  // namespace

AttentionCall self_attention_args(const Shape& qkv, const SeqBatch& seqs, int heads, bool causal) {
  MT_AG_CHECK(qkv.rank == 2 && qkv.cols() % 3 == 0 && qkv.rows() == int64_t(seqs.batch) * seqs.length,
              "self_attention: qkv " + qkv.str() + " is not [B*L, 3C]");
  const int C = qkv.cols() / 3;
  MT_AG_CHECK(heads > 0 && C % heads == 0, "self_attention: heads must divide C");
  AttentionCall call{{seqs.batch, seqs.length, seqs.length, heads, C, causal, true},
                     lengths_of(seqs, "self_attention")};
  const size_t B = call.lengths.size();
  call.lengths.resize(2 * B);  // the keys are the queries
  std::copy_n(call.lengths.begin(), B, call.lengths.begin() + B);
  return call;
}

AttentionCall cross_attention_args(const Shape& q, const SeqBatch& queries, const Shape& kv, const SeqBatch& keys,
                                   int heads) {
  MT_AG_CHECK(queries.batch == keys.batch, "cross_attention: query and key batches differ");
  MT_AG_CHECK(q.rank == 2 && q.rows() == int64_t(queries.batch) * queries.length,
              "cross_attention: q " + q.str() + " is not [B*Lq, C]");
  const int C = q.cols();
  MT_AG_CHECK(kv.rank == 2 && kv.cols() == 2 * C && kv.rows() == int64_t(keys.batch) * keys.length,
              "cross_attention: kv " + kv.str() + " is not [B*Lk, 2C]");
  MT_AG_CHECK(heads > 0 && C % heads == 0, "cross_attention: heads must divide C");
  AttentionCall call{{queries.batch, queries.length, keys.length, heads, C, false, false},
                     lengths_of(queries, "cross_attention")};
  const std::vector<int> k_len = lengths_of(keys, "cross_attention");
  call.lengths.insert(call.lengths.end(), k_len.begin(), k_len.end());
  return call;
}

EmbeddingArgs embedding_args(const Shape& table, std::span<const int> ids, int L, double scale) {
  MT_AG_CHECK(table.rank == 2, "embedding: table must be [V, C], not " + table.str());
  const int V = table[0];
  MT_AG_CHECK(L > 0 && ids.size() % size_t(L) == 0, "embedding: ids are not B rows of L");
  for (int id : ids) MT_AG_CHECK(id >= 0 && id < V, "embedding: id " + std::to_string(id) + " outside the vocabulary");
  return EmbeddingArgs{int(ids.size()), table[1], scale};
}

CrossEntropyArgs cross_entropy_args(const Shape& logits, std::span<const int> targets, int pad_id,
                                    double label_smoothing) {
  const int V = logits.cols();
  MT_AG_CHECK(int64_t(targets.size()) == logits.rows(), "cross_entropy: one target per row of " + logits.str());
  MT_AG_CHECK(label_smoothing >= 0.0 && label_smoothing < 1.0, "cross_entropy: label smoothing outside [0, 1)");
  for (int t : targets)
    MT_AG_CHECK(t == pad_id || (t >= 0 && t < V),
                "cross_entropy: target " + std::to_string(t) + " outside the vocabulary");
  return CrossEntropyArgs{pad_id, label_smoothing};
}

}  // namespace mt::autograd
