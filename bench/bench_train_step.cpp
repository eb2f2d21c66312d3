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

#include "optim/adam.hpp"

#include "train_step_batch.hpp"

namespace {

using mt::bench::kTrainLength;
using mt::bench::kTrainSentences;

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
}

BENCHMARK_CAPTURE(BM_train_step, tiny, std::string("tiny"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(mt::bench::train_min_time());
BENCHMARK_CAPTURE(BM_train_step, small, std::string("small"))
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(mt::bench::train_min_time());

}  // namespace

BENCHMARK_MAIN();
