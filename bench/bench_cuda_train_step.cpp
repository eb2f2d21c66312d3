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

#include "train_step_batch.hpp"

namespace {

using mt::bench::kTrainLength;
using mt::bench::kTrainSentences;

void BM_cuda_train_step(benchmark::State& state, const std::string& preset) {
  const mt::ModelConfig config = mt::ModelConfig::preset(preset).value();
  mt::autograd::Graph<float> host_graph(1);
  mt::train::TransformerModel<float> host(host_graph, config);
  host.initialize(1);
  mt::autograd::gpu::Graph g;
  mt::train::CudaTransformerModel model(g, config);
  model.upload_from(host);
  const mt::train::Batch batch = mt::bench::random_train_batch(config);
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
  state.counters["target_tokens/s"] = benchmark::Counter(
      double(kTrainSentences) * kTrainLength * double(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* preset : {"tiny", "small", "base"}) {
    benchmark::RegisterBenchmark((std::string("cuda_train_step/") + preset).c_str(), BM_cuda_train_step, preset)
        ->UseRealTime()
        ->MinTime(mt::bench::train_min_time())
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
