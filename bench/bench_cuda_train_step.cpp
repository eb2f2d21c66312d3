// GPU trainer benchmark: the step of bench_train_step.cpp (forward + backward
// + Adam, 128 sentences x 32 tokens on both sides, label smoothing 0.1, no
// dropout) on the trainer's CUDA mirror (trainer/cuda). Reports target
// tokens/s, wall clock, each step ending with the loss on the host (the
// trainer's own synchronisation point). MT_BENCH_MIN_TIME: seconds of timed
// steps per config (default 3).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cuda/adam.hpp"
#include "cuda/cuda_transformer_model.hpp"

namespace {

constexpr int kSentences = 128;
constexpr int kLength = 32;  // source and target positions, EOS included

double bench_min_time() {
  const char* env = std::getenv("MT_BENCH_MIN_TIME");
  return env ? std::max(0.1, std::atof(env)) : 3.0;
}

// The same random batch as bench_train_step.cpp.
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
  for (int s = 0; s < b.B; ++s) {
    b.target_input[size_t(s) * kLength] = c.bos_id;
    for (int t = 1; t < kLength; ++t) b.target_input[size_t(s) * kLength + t] = b.target_output[size_t(s) * kLength + t - 1];
  }
  b.source_lengths.assign(size_t(b.B), kLength);
  b.target_lengths.assign(size_t(b.B), kLength);
  b.target_tokens = b.B * kLength;
  return b;
}

void BM_cuda_train_step(benchmark::State& state, const std::string& preset) {
  const mt::ModelConfig config = mt::ModelConfig::preset(preset).value();
  mt::autograd::Graph<float> host_graph(1);
  mt::train::TransformerModel<float> host(host_graph, config);
  host.initialize(1);
  mt::autograd::gpu::Graph g;
  mt::train::CudaTransformerModel model(g, config);
  model.upload_from(host);
  const mt::train::Batch batch = random_batch(config);
  mt::train::ForwardOptions o;
  o.label_smoothing = 0.1;
  mt::train::AdamOptions ao;
  ao.lr = 5e-4;
  ao.warmup = 4000;
  mt::autograd::gpu::Adam adam(g, ao);
  auto step = [&] {
    g.clear();
    g.zero_grad();
    const auto ce = model.loss(batch, o);  // returns once the loss is on the host
    g.backward(ce.loss);
    adam.step(1.0 / double(ce.tokens));
    return ce.value;
  };
  step();  // the first step sizes every buffer; later ones reuse them
  for (auto _ : state) benchmark::DoNotOptimize(step());
  g.synchronize();
  state.counters["target_tokens/s"] =
      benchmark::Counter(double(kSentences) * kLength * double(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* preset : {"tiny", "small", "base"}) {
    benchmark::RegisterBenchmark((std::string("cuda_train_step/") + preset).c_str(), BM_cuda_train_step, preset)
        ->UseRealTime()
        ->MinTime(bench_min_time())
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
