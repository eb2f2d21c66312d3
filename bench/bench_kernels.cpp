// Kernel benchmarks, one set per ISA table this CPU runs (and the core's
// compute ceilings, fma_peak_f32 and dot_peak_u8s8: bench/fma_peak.hpp):
//   gemm_f32/<isa>/M:../N:../K:..   GFLOP/s in the "FLOPS" counter
//   gemm_u8s8/<isa>/M:../N:../K:..  int8 GEMM, GOP/s (2 M N K) in the "OPS" counter
//   quantize_rows_u8/<isa>/M:../K:..  dynamic per-row quantization
//   layer_norm_f32/<isa>/C:..       one row
//   attention_f32/<isa>/Tq:../Tk:../dh:..  one head
//   select/<isa>/V:../k:../{unfused,fused}  the search's choice from one row of
//       logits: log_softmax_f32 then argmax (k = 1) or top_k_f32 (k = 2 x beam),
//       against log_sum_exp_f32 + argmax / log_softmax_top_k_f32 (no row written)
// Run e.g. bench_kernels --benchmark_filter='gemm_f32/avx512/M:1/' --benchmark_min_time=0.1
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "fma_peak.hpp"
#include "mt/kernels.h"

namespace {

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

void bench_gemm(benchmark::State& state, const mt::KernelTable* t, int M, int N, int K) {
  const std::vector<float> A = random_vector(size_t(M) * K, 1);
  const std::vector<float> bias = random_vector(N, 3);
  std::vector<float> Wp(mt::packed_size(N, K));
  {
    const std::vector<float> w = random_vector(size_t(N) * K, 2);
    mt::pack_weights_f32(w.data(), N, K, Wp.data());
  }
  std::vector<float> C(size_t(M) * N);
  for (auto _ : state) {
    t->gemm_f32(A.data(), K, Wp.data(), bias.data(), nullptr, 0, C.data(), N, M, N, K, 0, N, mt::Activation::none);
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] =
      benchmark::Counter(2.0 * M * N * K * double(state.iterations()), benchmark::Counter::kIsRate);
}

// The int8 GEMM alone (activations already quantized), same shapes as gemm_f32.
void bench_gemm_u8s8(benchmark::State& state, const mt::KernelTable* t, int M, int N, int K) {
  const int Kp = mt::padded_k_i8(K);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
  std::vector<uint8_t> Aq(size_t(M) * Kp, 0);
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) Aq[size_t(m) * Kp + k] = uint8_t(u8(rng));
  std::vector<int8_t> w(size_t(N) * K), Wp(mt::packed_size_i8(N, K));
  for (int8_t& x : w) x = int8_t(s8(rng));
  mt::pack_weights_i8(w.data(), N, K, Wp.data());
  std::vector<int32_t> w_sum(N, 0), a_zero(M, 128);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) w_sum[n] += w[size_t(n) * K + k];
  const std::vector<float> bias = random_vector(N, 3);
  const std::vector<float> w_scale(N, 0.01f), a_scale(M, 0.02f);
  std::vector<float> C(size_t(M) * N);
  for (auto _ : state) {
    t->gemm_u8s8(Aq.data(), Kp, Wp.data(), w_sum.data(), w_scale.data(), a_scale.data(), a_zero.data(), bias.data(),
                 nullptr, 0, C.data(), N, M, N, K, 0, N, mt::Activation::none);
    benchmark::ClobberMemory();
  }
  state.counters["OPS"] = benchmark::Counter(2.0 * M * N * K * double(state.iterations()), benchmark::Counter::kIsRate);
}

void bench_quantize_rows_u8(benchmark::State& state, const mt::KernelTable* t, int M, int K) {
  const int Kp = mt::padded_k_i8(K);
  const std::vector<float> A = random_vector(size_t(M) * K, 1);
  std::vector<uint8_t> Aq(size_t(M) * Kp);
  std::vector<float> scales(M);
  std::vector<int32_t> zeros(M);
  for (auto _ : state) {
    t->quantize_rows_u8(A.data(), K, M, K, Aq.data(), Kp, scales.data(), zeros.data(), 0.0f, 0);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * M * K);
}

void bench_layer_norm(benchmark::State& state, const mt::KernelTable* t, int C) {
  std::vector<float> x = random_vector(C, 1), gamma = random_vector(C, 2), beta = random_vector(C, 3);
  std::vector<float> y(C);
  for (auto _ : state) {
    t->layer_norm_f32(x.data(), gamma.data(), beta.data(), y.data(), C, 1e-5f);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
}

// One head of self-attention with heads interleaved in rows of H * dh.
void bench_attention(benchmark::State& state, const mt::KernelTable* t, int Tq, int Tk, int dh) {
  const int H = 8;
  const size_t stride = size_t(H) * dh;
  const std::vector<float> q = random_vector(Tq * stride, 1);
  const std::vector<float> k = random_vector(Tk * stride, 2);
  const std::vector<float> v = random_vector(Tk * stride, 3);
  std::vector<float> out(Tq * stride), scratch(Tk);
  const int causal_offset = Tq == 1 ? Tk - 1 : -1;  // a decoding step sees every key so far
  for (auto _ : state) {
    t->attention_f32(q.data(), stride, k.data(), v.data(), stride, out.data(), stride, Tq, Tk, dh,
                     1.0f / std::sqrt(float(dh)), causal_offset, scratch.data());
    benchmark::ClobberMemory();
  }
}

// One row of V logits (a trained model's shape: a few large, a long tail),
// chosen from as the search does: k = 1 greedy (argmax), else top k.
void bench_select(benchmark::State& state, const mt::KernelTable* t, int V, int k, bool fused) {
  std::vector<float> logits = random_vector(size_t(V), 7);
  for (int i = 0; i < V; i += 97) logits[size_t(i)] += 8.0f;
  std::vector<float> row(logits.size(), 0.0f);
  float values[mt::kTopKMax];
  int32_t indices[mt::kTopKMax];
  int count = 0;
  for (auto _ : state) {
    if (!fused) {
      row = logits;  // the search works on the logits in place
      if (k == 1) {
        float best = 0.0f;
        indices[0] = t->argmax_f32(row.data(), V, &best);
        t->log_softmax_f32(row.data(), row.data(), V);
      } else {
        t->log_softmax_f32(row.data(), row.data(), V);
        t->top_k_f32(row.data(), V, k, values, indices, &count);
      }
    } else {
      row = logits;  // the same copy, so both sides pay for it
      if (k == 1) {
        float best = 0.0f, max = 0.0f, log_sum = 0.0f;
        indices[0] = t->argmax_f32(row.data(), V, &best);
        t->log_sum_exp_f32(row.data(), V, &max, &log_sum);
        values[0] = best - max - log_sum;
      } else {
        t->log_softmax_top_k_f32(row.data(), V, k, values, indices, &count);
      }
    }
    benchmark::DoNotOptimize(values);
    benchmark::ClobberMemory();
  }
}

void register_benchmarks() {
  mt_bench::register_peak_benchmarks();  // fma_peak_f32, dot_peak_u8s8 (bench/fma_peak.hpp)
  const int Ms[] = {1, 4, 16, 32, 256};
  const int NKs[][2] = {{512, 512}, {2048, 512}, {512, 2048}, {32000, 512},
                        {256, 256}, {1024, 256}, {256, 1024}, {8000, 256}};
  for (const mt::KernelTable* t : mt::available_kernels()) {
    const std::string isa = t->isa;
    for (int M : Ms)
      for (const auto& nk : NKs) {
        const std::string name = "gemm_f32/" + isa + "/M:" + std::to_string(M) + "/N:" + std::to_string(nk[0]) +
                                 "/K:" + std::to_string(nk[1]);
        benchmark::RegisterBenchmark(name.c_str(), bench_gemm, t, M, nk[0], nk[1])->Unit(benchmark::kMicrosecond);
      }
    for (int M : Ms)
      for (const auto& nk : NKs) {
        const std::string name = "gemm_u8s8/" + isa + "/M:" + std::to_string(M) + "/N:" + std::to_string(nk[0]) +
                                 "/K:" + std::to_string(nk[1]);
        benchmark::RegisterBenchmark(name.c_str(), bench_gemm_u8s8, t, M, nk[0], nk[1])->Unit(benchmark::kMicrosecond);
      }
    for (int M : {1, 32})
      for (int K : {512, 2048}) {
        const std::string name = "quantize_rows_u8/" + isa + "/M:" + std::to_string(M) + "/K:" + std::to_string(K);
        benchmark::RegisterBenchmark(name.c_str(), bench_quantize_rows_u8, t, M, K)->Unit(benchmark::kMicrosecond);
      }
    for (int C : {512, 1024})
      benchmark::RegisterBenchmark(("layer_norm_f32/" + isa + "/C:" + std::to_string(C)).c_str(), bench_layer_norm, t,
                                   C);
    for (int V : {8000, 32000, 58101, 256206})
      for (int k : {1, 8})
        for (bool fused : {false, true}) {
          const std::string name = "select/" + isa + "/V:" + std::to_string(V) + "/k:" + std::to_string(k) + "/" +
                                   (fused ? "fused" : "unfused");
          benchmark::RegisterBenchmark(name.c_str(), bench_select, t, V, k, fused)->Unit(benchmark::kMicrosecond);
        }
    const int shapes[][3] = {{1, 64, 64}, {1, 256, 64}, {64, 64, 64}, {128, 128, 64}};
    for (const auto& s : shapes) {
      const std::string name = "attention_f32/" + isa + "/Tq:" + std::to_string(s[0]) + "/Tk:" + std::to_string(s[1]) +
                               "/dh:" + std::to_string(s[2]);
      benchmark::RegisterBenchmark(name.c_str(), bench_attention, t, s[0], s[1], s[2])->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
