// Trainer benchmark: one training step (forward + backward + Adam) of the
// "small" and "tiny" configs on a batch of 128 sentences x 32 random tokens
// on both sides (4096 target tokens, no padding), label smoothing 0.1, no
// dropout. Reports target tokens/s (wall clock) and the step's matrix
// products in GFLOP/s; beside them the FMA peak on the same threads
// (fma_peak_f32), the step's GEMM shapes one by one (train_gemm/...) and
// some of its ops alone (output_loss, dropout_forward, layer_norm, attention).
// MT_BENCH_THREADS sets the graph's threads (default 1), MT_BENCH_MIN_TIME
// the seconds of timed steps per config (default 3).
// bench/torch_train_step.py times the same step in PyTorch with the same
// variables. --benchmark_filter=train_step runs the steps alone.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "autograd/gemm.hpp"
#include "autograd/linear_cross_entropy.hpp"
#include "autograd/ops.hpp"
#include "fma_peak.hpp"
#include "optim/adam.hpp"

#include "train_step_batch.hpp"

namespace {

using mt::bench::kTrainLength;
using mt::bench::kTrainSentences;

// The benchmarks' operands: a 32-bit LCG's next state, and a value in
// [-0.5, 0.5) from its top 23 bits.
uint32_t lcg_next(uint32_t& s) { return s = s * 1664525u + 1013904223u; }
float lcg_uniform(uint32_t& s) { return float(lcg_next(s) >> 9) * 0x1p-23f - 0.5f; }

int bench_threads() {
  const char* env = std::getenv("MT_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

void BM_train_step(benchmark::State& state, const std::string& preset) {
  const mt::ModelConfig config = mt::ModelConfig::preset(preset).value();
  mt::autograd::Graph<float> g(bench_threads());
  mt::train::TransformerModel<float> model(g, config);
  model.initialize(1);
  const mt::train::Batch batch = mt::bench::random_train_batch(config);
  mt::train::ForwardOptions o;
  o.label_smoothing = 0.1;
  mt::train::AdamOptions ao;
  ao.lr = 5e-4;
  ao.warmup = 4000;
  mt::train::Adam<float> adam(g, ao);
  auto step = [&] {
    g.clear();
    g.zero_grad();
    const auto ce = model.loss(batch, o);
    g.backward(ce.loss);
    adam.step(1.0 / double(ce.tokens));
    return ce.loss->value[0];
  };
  step();  // the first step sizes every buffer; later ones reuse them
  for (auto _ : state) benchmark::DoNotOptimize(step());
  state.counters["target_tokens/s"] =
      benchmark::Counter(double(batch.target_tokens), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = double(bench_threads());
  // The step's products over its wall time (train_step_gemm_flops).
  state.counters["GEMM_GFLOP/s"] = benchmark::Counter(mt::bench::train_step_gemm_flops(config) * 1e-9,
                                                      benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_train_step, tiny, std::string("tiny"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(mt::bench::train_min_time());
BENCHMARK_CAPTURE(BM_train_step, small, std::string("small"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(mt::bench::train_min_time());

// The step's products one by one, as autograd::gemm runs them (tiny: 4096
// tokens, d_model 128, d_ff 256, vocabulary 8000), in GFLOP/s: where a
// step's GEMM time goes. Weight gradients sum over the 4096 tokens (K).
void BM_train_gemm(benchmark::State& state, int M, int N, int K, bool nk) {
  using mt::autograd::BLayout;
  mt::autograd::Graph<float> g(bench_threads());
  std::vector<float> A(size_t(M) * K), B(size_t(N) * K), C(size_t(M) * N);
  uint32_t x = 7;
  for (auto* v : {&A, &B})
    for (float& f : *v) f = lcg_uniform(x);
  for (auto _ : state) {
    mt::autograd::gemm(g, M, N, K, A.data(), size_t(K), B.data(), size_t(nk ? K : N), nk ? BLayout::nk : BLayout::kn,
                       static_cast<const float*>(nullptr), C.data(), size_t(N), false);
    benchmark::DoNotOptimize(C.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * M * N * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Forward (nk: x W^T), input gradient (kn: dy W) and weight gradient (kn:
// dy^T x or x^T dy, K = tokens) of the output projection, FFN and attention
// projections.
BENCHMARK_CAPTURE(BM_train_gemm, logits_fwd, 4096, 8000, 128, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_train_gemm, logits_dx, 4096, 128, 8000, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_train_gemm, logits_dw, 128, 8000, 4096, false)->UseRealTime();
// The input gradient of a 32,000-word output layer at d_model 512 (a
// converted Marian model fine-tuned with --init), 1,024 tokens.
BENCHMARK_CAPTURE(BM_train_gemm, logits_dx_v32k_d512, 1024, 512, 32000, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_train_gemm, ffn_fwd, 4096, 256, 128, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_train_gemm, ffn_dx, 4096, 128, 256, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_train_gemm, ffn_dw, 128, 256, 4096, false)->UseRealTime();
BENCHMARK_CAPTURE(BM_train_gemm, proj_fwd, 4096, 128, 128, true)->UseRealTime();
BENCHMARK_CAPTURE(BM_train_gemm, proj_dw, 128, 128, 4096, false)->UseRealTime();

// The output layer and the loss, forward and backward, on a tiny step's
// shape (4096 tokens, d_model 128, vocabulary 8000): as one op
// (linear_cross_entropy, what TransformerModel::loss runs) or as linear
// then cross_entropy. The same bits either way (test_linear_cross_entropy).
void BM_output_loss(benchmark::State& state, bool fused) {
  constexpr int M = 4096, V = 8000, K = 128;
  mt::autograd::Graph<float> g(bench_threads());
  auto* x = g.parameter("x", mt::autograd::Shape{M, K});
  auto* w = g.parameter("w", mt::autograd::Shape{V, K});
  auto* b = g.parameter("b", mt::autograd::Shape{V});
  uint32_t s = 7;
  for (auto* t : {x, w, b})
    for (float& f : t->value) f = lcg_uniform(s);
  std::vector<int> targets(M);
  for (int& t : targets) t = int(lcg_next(s) >> 8) % V;
  for (auto _ : state) {
    g.clear();
    g.zero_grad();
    const auto ce = fused ? mt::autograd::linear_cross_entropy(g, x, w, b, targets, -1, 0.1)
                          : mt::autograd::cross_entropy(g, mt::autograd::linear(g, x, w, b), targets, -1, 0.1);
    g.backward(ce.loss);
    benchmark::DoNotOptimize(w->grad.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(3 * 2.0 * M * V * K * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_output_loss, fused, true)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_output_loss, unfused, false)->UseRealTime()->Unit(benchmark::kMillisecond);

// Dropout's forward (draw, mask, product) on one [tokens, d_ff] activation of
// a tiny step; the mask's implementation follows the kernel table, so
// MT_ISA=avx2 times the scalar one on an AVX-512 CPU.
void BM_dropout_forward(benchmark::State& state) {
  constexpr int M = 4096, N = 256;
  mt::autograd::Graph<float> g(bench_threads());
  g.set_seed(1);
  auto* x = g.parameter("x", mt::autograd::Shape{M, N});
  std::fill(x->value.begin(), x->value.end(), 1.0f);
  for (auto _ : state) {
    g.clear();
    benchmark::DoNotOptimize(mt::autograd::dropout(g, x, 0.2)->data());
  }
  state.counters["elements/s"] = benchmark::Counter(double(M) * N, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_dropout_forward)->UseRealTime();

// LayerNorm's forward and backward on a tiny step's [tokens, d_model], the
// input and both parameters needing gradients (a sublayer's norm), under
// a sum (whose backward fills dy).
void BM_layer_norm(benchmark::State& state) {
  constexpr int M = 4096, C = 128;
  mt::autograd::Graph<float> g(bench_threads());
  auto* x = g.parameter("x", mt::autograd::Shape{M, C});
  auto* gamma = g.parameter("gamma", mt::autograd::Shape{C});
  auto* beta = g.parameter("beta", mt::autograd::Shape{C});
  uint32_t s = 11;
  for (auto* t : {x, gamma, beta})
    for (float& f : t->value) f = lcg_uniform(s);
  for (auto _ : state) {
    g.clear();
    g.zero_grad();
    g.backward(mt::autograd::sum(g, mt::autograd::layer_norm(g, x, gamma, beta, 1e-5)));
    benchmark::DoNotOptimize(gamma->grad.data());
  }
  state.counters["rows/s"] = benchmark::Counter(M, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_layer_norm)->UseRealTime();

// Self-attention's forward and backward on a tiny step's shape (128
// sequences x 32 positions, 4 heads of 32), causal as the decoder's, under a
// sum: per (sequence, head) six 32 x 32 x 32 products, the softmax and dS.
void BM_attention(benchmark::State& state) {
  constexpr int B = 128, L = 32, C = 128, H = 4;
  mt::autograd::Graph<float> g(bench_threads());
  auto* qkv = g.parameter("qkv", mt::autograd::Shape{B * L, 3 * C});
  uint32_t s = 13;
  for (float& f : qkv->value) f = lcg_uniform(s);
  const mt::autograd::SeqBatch seqs{B, L, {}};
  for (auto _ : state) {
    g.clear();
    g.zero_grad();
    g.backward(mt::autograd::sum(g, mt::autograd::self_attention(g, qkv, seqs, H, true)));
    benchmark::DoNotOptimize(qkv->grad.data());
  }
  state.counters["heads/s"] = benchmark::Counter(B * H, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_attention)->UseRealTime();

}  // namespace

// fma_peak_f32 on MT_BENCH_THREADS threads at once: the ceiling of the
// step's GEMM_GFLOP/s (its FLOPS sum the threads').
int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
#if defined(__x86_64__)
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 || (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    benchmark::RegisterBenchmark(avx512 ? "fma_peak_f32/avx512" : "fma_peak_f32/avx2",
                                 avx512 ? mt_bench::fma_peak_f32 : mt_bench::fma_peak_f32_avx2)
        ->Threads(bench_threads())
        ->UseRealTime()
        ->MinTime(0.5);
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
