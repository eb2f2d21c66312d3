// Trainer benchmark: one training step (forward + backward + Adam) of the
// "small" and "tiny" configs on a batch of 128 sentences x 32 random tokens
// on both sides (4096 target tokens, no padding), label smoothing 0.1, no
// dropout. Reports target tokens/s (wall clock). MT_BENCH_THREADS sets the
// graph's threads (default 1), MT_BENCH_MIN_TIME the seconds of timed steps
// per config (default 3). bench/torch_train_step.py times the same step in
// PyTorch with the same variables.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/transformer_model.hpp"
#include "optim/adam.hpp"

namespace {

constexpr int kSentences = 128;
constexpr int kLength = 32;  // source and target positions, EOS included

int bench_threads() {
  const char* env = std::getenv("MT_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

double bench_min_time() {
  const char* env = std::getenv("MT_BENCH_MIN_TIME");
  return env ? std::max(0.1, std::atof(env)) : 3.0;
}

// Random ids in [4, V) on both sides, every sentence full length.
mt::train::Batch random_batch(const mt::ModelConfig& c) {
  mt::train::Batch b;
  b.B = kSentences;
  b.S = b.T = kLength;
  uint32_t x = 12345;
  auto next = [&](int vocab) { return int32_t(4 + ((x = x * 1664525u + 1013904223u) >> 8) % uint32_t(vocab - 4)); };
  const size_t n = size_t(b.B) * kLength;
  b.source.resize(n);
  b.target_input.resize(n);
  b.target_output.resize(n);
  for (size_t i = 0; i < n; ++i) {
    b.source[i] = next(c.source_vocab_size);
    b.target_output[i] = next(c.target_vocab_size);
  }
  for (int s = 0; s < b.B; ++s) {  // labels shifted right behind BOS: teacher forcing
    b.target_input[size_t(s) * kLength] = c.bos_id;
    for (int t = 1; t < kLength; ++t) b.target_input[size_t(s) * kLength + t] = b.target_output[size_t(s) * kLength + t - 1];
  }
  b.source_lengths.assign(size_t(b.B), kLength);
  b.target_lengths.assign(size_t(b.B), kLength);
  b.target_tokens = b.B * kLength;
  return b;
}

void BM_train_step(benchmark::State& state, const std::string& preset) {
  const mt::ModelConfig config = mt::ModelConfig::preset(preset).value();
  mt::autograd::Graph<float> g(bench_threads());
  mt::train::TransformerModel<float> model(g, config);
  model.initialize(1);
  const mt::train::Batch batch = random_batch(config);
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
}

BENCHMARK_CAPTURE(BM_train_step, tiny, std::string("tiny"))->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(bench_min_time());
BENCHMARK_CAPTURE(BM_train_step, small, std::string("small"))->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(bench_min_time());

}  // namespace

BENCHMARK_MAIN();
