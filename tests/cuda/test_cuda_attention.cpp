// The fused CUDA attention against attention_f32_ref, in the layouts the
// runtime uses (lib/src/transformer/transformer.cpp): packed encoder batches, padded
// batches with lengths, causal decoder sequences, cross-attention shared by
// beams, and decode steps appending to a KV cache. Rows that must never be
// read (padding, cache positions not written yet) hold NaN, so reading one
// shows up as NaN in the output.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cuda/cuda_test_util.hpp"
#include "kernel_test_util.hpp"
#include "mt/cuda_kernels.h"
#include "mt/kernels.h"

namespace mt {
namespace {

using test::DeviceVector;
using test::random_vector;
using test::require_close;
using test::require_equal;
using test::require_finished;
using test::require_ok;
using test::TestStream;

// Outputs are convex combinations of values in [-1, 1]; kernel and reference
// differ by the order of the sums and by exp (online softmax), ~1e-6. A key
// masked wrongly among a thousand moves an output by ~1e-3.
constexpr double kAttentionTol = 1e-4;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kUnwritten = -12345.0f;  // output rows no query owns keep this

struct HeadShape {
  int heads, dh;
};
// Head sizes around the warp width: lanes hold dims lane + 32 c.
const HeadShape kHeadShapes[] = {{1, 8}, {3, 64}, {2, 80}, {8, 64}, {1, 128}, {4, 1}};

// Queries in [-3, 3] make the softmax peaked rather than nearly uniform.
std::vector<float> qkv_values(size_t rows, int C, uint32_t seed) {
  std::vector<float> x = random_vector(rows * 3 * C, seed);
  for (size_t r = 0; r < rows; ++r)
    for (int c = 0; c < C; ++c) x[r * 3 * C + c] *= 3.0f;
  return x;
}

std::vector<int32_t> offsets_of(const std::vector<int32_t>& lengths) {
  std::vector<int32_t> offsets(lengths.size() + 1, 0);
  std::partial_sum(lengths.begin(), lengths.end(), offsets.begin() + 1);
  return offsets;
}

// attention_f32_ref for one sequence and every head.
void reference_heads(const float* q, size_t q_ld, const float* k, const float* v, size_t kv_ld, float* out,
                     size_t out_ld, int Tq, int Tk, int heads, int dh, int causal_offset) {
  std::vector<float> scratch(std::max(Tk, 1));
  const float scale = 1.0f / std::sqrt(float(dh));
  for (int h = 0; h < heads; ++h) {
    const size_t col = size_t(h) * dh;
    reference_kernels().attention_f32(q + col, q_ld, k + col, v + col, kv_ld, out + col, out_ld, Tq, Tk, dh, scale,
                                      causal_offset, scratch.data());
  }
}

void run_attention(const CudaAttention& a, CudaStream stream) {
  require_ok(attention_f32_cuda(a, stream), "attention_f32_cuda");
  require_finished(stream, "attention_f32_cuda");
}

TEST_CASE("cuda: attention over a packed encoder batch", "[cuda][attention]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const std::vector<int32_t> lengths = {5, 0, 33, 1, 70};
  const std::vector<int32_t> offsets = offsets_of(lengths);
  const int B = int(lengths.size()), N = offsets[B];
  const int max_len = *std::max_element(lengths.begin(), lengths.end());
  for (const HeadShape s : kHeadShapes) {
    const int C = s.heads * s.dh;
    INFO("heads " << s.heads << ", dh " << s.dh << ", lengths 5 0 33 1 70");
    const std::vector<float> qkv = qkv_values(N, C, C);
    std::vector<float> want(size_t(N) * C, kUnwritten);
    for (int b = 0; b < B; ++b) {
      const float* q = qkv.data() + size_t(offsets[b]) * 3 * C;
      reference_heads(q, 3 * C, q + C, q + 2 * C, 3 * C, want.data() + size_t(offsets[b]) * C, C, lengths[b],
                      lengths[b], s.heads, s.dh, -1);
    }
    DeviceVector<float> d_qkv(qkv), d_out(want.size());
    DeviceVector<int32_t> d_offsets(offsets), d_lengths(lengths);
    d_out.upload(std::vector<float>(want.size(), kUnwritten));
    CudaAttention a;
    a.q = d_qkv.get(), a.k = d_qkv.get() + C, a.v = d_qkv.get() + 2 * C;
    a.q_ld = a.kv_ld = 3 * size_t(C);
    a.out = d_out.get(), a.out_ld = C;
    a.q_rows = a.kv_rows = CudaSequenceRows{d_offsets.get(), d_lengths.get(), 0, max_len};
    a.batch = B, a.heads = s.heads, a.dh = s.dh, a.scale = 1.0f / std::sqrt(float(s.dh));
    run_attention(a, stream.get());
    require_close(want, d_out.download(), kAttentionTol, "packed encoder attention");
  }
}

TEST_CASE("cuda: attention over a padded batch, with and without the causal mask", "[cuda][attention]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const std::vector<int32_t> lengths = {37, 1, 20, 0, 36};
  const int B = int(lengths.size()), T = 37;
  for (const HeadShape s : kHeadShapes) {
    const int C = s.heads * s.dh;
    std::vector<float> qkv = qkv_values(size_t(B) * T, C, C + 1);
    // Padding rows are NaN: a kernel reading one would put NaN in an output.
    for (int b = 0; b < B; ++b)
      std::fill(qkv.begin() + (size_t(b) * T + lengths[b]) * 3 * C, qkv.begin() + size_t(b + 1) * T * 3 * C, kNaN);
    DeviceVector<float> d_qkv(qkv), d_out(size_t(B) * T * C);
    DeviceVector<int32_t> d_lengths(lengths);
    for (int causal : {-1, 0}) {
      INFO("heads " << s.heads << ", dh " << s.dh << ", causal_offset " << causal << ", T 37, lengths 37 1 20 0 36");
      std::vector<float> want(size_t(B) * T * C, kUnwritten);
      for (int b = 0; b < B; ++b) {
        const float* q = qkv.data() + size_t(b) * T * 3 * C;
        reference_heads(q, 3 * C, q + C, q + 2 * C, 3 * C, want.data() + size_t(b) * T * C, C, lengths[b], lengths[b],
                        s.heads, s.dh, causal);
      }
      d_out.upload(std::vector<float>(want.size(), kUnwritten));
      CudaAttention a;
      a.q = d_qkv.get(), a.k = d_qkv.get() + C, a.v = d_qkv.get() + 2 * C;
      a.q_ld = a.kv_ld = 3 * size_t(C);
      a.out = d_out.get(), a.out_ld = C;
      a.q_rows = a.kv_rows = CudaSequenceRows{nullptr, d_lengths.get(), T, T};
      a.batch = B, a.heads = s.heads, a.dh = s.dh, a.scale = 1.0f / std::sqrt(float(s.dh));
      a.causal_offset = causal;
      run_attention(a, stream.get());
      require_close(want, d_out.download(), kAttentionTol, "padded attention");
    }
  }
}

TEST_CASE("cuda: causal attention of Tq queries over Tk keys", "[cuda][attention]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const int B = 2, heads = 2, dh = 64, C = heads * dh;
  struct Lengths {
    int Tq, Tk;
  };
  // Queries are the last Tq of Tk positions (causal_offset Tk - Tq): 1 to 5
  // queries cover every split of a block's warps; 1000 keys many tiles.
  for (const Lengths L : {Lengths{1, 1}, Lengths{2, 2}, Lengths{3, 6}, Lengths{4, 4}, Lengths{5, 105}, Lengths{37, 37},
                          Lengths{1, 1000}, Lengths{300, 300}}) {
    // Separate q [B Tq, C] and kv [B Tk, 2C] (K then V per row), a padded output stride.
    const std::vector<float> q = random_vector(size_t(B) * L.Tq * C, L.Tq, -3.0f, 3.0f);
    const std::vector<float> kv = random_vector(size_t(B) * L.Tk * 2 * C, L.Tk + 1);
    const size_t out_ld = C + 4;
    DeviceVector<float> d_q(q), d_kv(kv), d_out(size_t(B) * L.Tq * out_ld);
    for (bool causal : {true, false}) {
      const int causal_offset = causal ? L.Tk - L.Tq : -1;
      INFO("Tq " << L.Tq << ", Tk " << L.Tk << ", causal_offset " << causal_offset);
      std::vector<float> want(size_t(B) * L.Tq * out_ld, kUnwritten);
      for (int b = 0; b < B; ++b) {
        const float* k = kv.data() + size_t(b) * L.Tk * 2 * C;
        reference_heads(q.data() + size_t(b) * L.Tq * C, C, k, k + C, 2 * C, want.data() + size_t(b) * L.Tq * out_ld,
                        out_ld, L.Tq, L.Tk, heads, dh, causal_offset);
      }
      d_out.upload(std::vector<float>(want.size(), kUnwritten));
      CudaAttention a;
      a.q = d_q.get(), a.q_ld = C;
      a.k = d_kv.get(), a.v = d_kv.get() + C, a.kv_ld = 2 * size_t(C);
      a.out = d_out.get(), a.out_ld = out_ld;
      a.q_rows = CudaSequenceRows{nullptr, nullptr, L.Tq, L.Tq};
      a.kv_rows = CudaSequenceRows{nullptr, nullptr, L.Tk, L.Tk};
      a.batch = B, a.heads = heads, a.dh = dh, a.scale = 1.0f / std::sqrt(float(dh));
      a.causal_offset = causal_offset;
      run_attention(a, stream.get());
      require_close(want, d_out.download(), kAttentionTol, "causal attention");
    }
  }
}

TEST_CASE("cuda: cross-attention of beams over their source's memory", "[cuda][attention]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const std::vector<int32_t> src_lengths = {4, 50, 1, 33};
  const std::vector<int32_t> src_offsets = offsets_of(src_lengths);
  const int sources = int(src_lengths.size()), beams = 3, rows = sources * beams;
  const int max_len = *std::max_element(src_lengths.begin(), src_lengths.end());
  for (const HeadShape s : kHeadShapes) {
    const int C = s.heads * s.dh;
    // Memory projection [N, 2C] (K then V per row), as project_memory writes it.
    const std::vector<float> memory = random_vector(size_t(src_offsets[sources]) * 2 * C, C + 2);
    DeviceVector<float> d_memory(memory);
    DeviceVector<int32_t> d_offsets(src_offsets), d_lengths(src_lengths);
    for (int Tq : {1, 6}) {  // a decode step; a full target sequence
      INFO("heads " << s.heads << ", dh " << s.dh << ", " << Tq << " queries per row, 3 beams, sources 4 50 1 33");
      const std::vector<float> q = random_vector(size_t(rows) * Tq * C, C + Tq, -3.0f, 3.0f);
      std::vector<float> want(q.size(), kUnwritten);
      for (int r = 0; r < rows; ++r) {
        const float* k = memory.data() + size_t(src_offsets[r / beams]) * 2 * C;
        reference_heads(q.data() + size_t(r) * Tq * C, C, k, k + C, 2 * C, want.data() + size_t(r) * Tq * C, C, Tq,
                        src_lengths[r / beams], s.heads, s.dh, -1);
      }
      DeviceVector<float> d_q(q), d_out(want.size());
      CudaAttention a;
      a.q = d_q.get(), a.q_ld = C;
      a.k = d_memory.get(), a.v = d_memory.get() + C, a.kv_ld = 2 * size_t(C);
      a.out = d_out.get(), a.out_ld = C;
      a.q_rows = CudaSequenceRows{nullptr, nullptr, Tq, Tq};
      a.kv_rows = CudaSequenceRows{d_offsets.get(), d_lengths.get(), 0, max_len};
      a.kv_group = beams;
      a.batch = rows, a.heads = s.heads, a.dh = s.dh, a.scale = 1.0f / std::sqrt(float(s.dh));
      run_attention(a, stream.get());
      require_close(want, d_out.download(), kAttentionTol, "cross-attention");
    }
  }
}

TEST_CASE("cuda: decode steps append to the KV cache and attend over it", "[cuda][attention]") {
  MT_REQUIRE_CUDA_DEVICE();
  TestStream stream;
  const int R = 3, P = 160, steps = 150;  // > 4 warps x 32 keys: several rounds per split
  for (const HeadShape s : {HeadShape{2, 64}, HeadShape{3, 80}, HeadShape{1, 128}}) {
    const int C = s.heads * s.dh;
    const size_t cache_row = size_t(P) * 2 * C;
    // The self-attention cache [R, P, 2C] of decoder_layers: positions not
    // written yet are NaN.
    std::vector<float> cache(size_t(R) * cache_row, kNaN);
    DeviceVector<float> d_cache(cache), d_qkv(size_t(R) * 3 * C), d_out(size_t(R) * C);
    for (int t = 0; t < steps; ++t) {
      INFO("heads " << s.heads << ", dh " << s.dh << ", step " << t);
      const std::vector<float> qkv = qkv_values(R, C, 1000 * C + t);
      std::vector<float> want(size_t(R) * C);
      for (int r = 0; r < R; ++r) {
        float* row = cache.data() + r * cache_row;
        std::copy_n(qkv.begin() + size_t(r) * 3 * C + C, 2 * C, row + size_t(t) * 2 * C);
        reference_heads(qkv.data() + size_t(r) * 3 * C, 3 * C, row, row + C, 2 * C, want.data() + size_t(r) * C, C, 1,
                        t + 1, s.heads, s.dh, -1);
      }
      d_qkv.upload(qkv);
      CudaAttention a;
      a.q = d_qkv.get(), a.q_ld = 3 * size_t(C);
      a.k = d_cache.get(), a.v = d_cache.get() + C, a.kv_ld = 2 * size_t(C);
      a.out = d_out.get(), a.out_ld = C;
      a.q_rows = CudaSequenceRows{nullptr, nullptr, 1, 1};
      a.kv_rows = CudaSequenceRows{nullptr, nullptr, P, t + 1};
      a.append_k = d_qkv.get() + C, a.append_v = d_qkv.get() + 2 * C, a.append_ld = 3 * size_t(C);
      a.batch = R, a.heads = s.heads, a.dh = s.dh, a.scale = 1.0f / std::sqrt(float(s.dh));
      run_attention(a, stream.get());
      require_close(want, d_out.download(), kAttentionTol, "decode attention");
    }
    // The appended keys and values are copies: bit-identical, NaN where unwritten.
    const std::vector<float> got = d_cache.download();
    for (size_t i = 0; i < cache.size(); ++i) {
      if (std::isnan(cache[i]) && std::isnan(got[i])) continue;
      if (!(cache[i] == got[i])) FAIL("KV cache element " << i << " is " << got[i] << ", expected " << cache[i]);
    }
  }
}

}  // namespace
}  // namespace mt
