// GPU translation throughput (CUDA sessions): whole sentences of 16 source
// -> exactly 16 target tokens on the paper's "base" configuration with random
// weights, greedy and beam 4, batches of 1, 32 and 128, GEMMs in fp32 and in
// TF32, decode steps replayed from CUDA Graphs or launched kernel by kernel;
// and base-int8 (bench_models.hpp), its weights dequantized to fp32 or
// kept int8 for int8 GEMMs (weights 1 and 2); base in half precision, fp16
// GEMMs (weights 3); and beam search with its
// bookkeeping on the device (device_search 1). Target tokens per second of
// wall time, and the session's creation time (graphs are captured then).
// Built only with CUDA; without a device it says so and exits 1.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_models.hpp"
#include "mt/mt.hpp"

namespace {

// What the session runs: base in fp32, base-int8 dequantized or int8, or
// base in half precision.
enum Weights { kFp32 = 0, kInt8Dequantized = 1, kInt8Gemm = 2, kFp16 = 3 };

std::shared_ptr<const mt::Model> base_model(int weights) {
  static std::shared_ptr<const mt::Model> models[2];
  const bool int8 = weights == kInt8Dequantized || weights == kInt8Gemm;
  const std::string name = int8 ? "base-int8" : "base";
  auto& model = models[int8 ? 1 : 0];
  if (!model) model = mt::Model::load(mt_bench::model_path(name)).value();
  return model;
}

void BM_CudaTranslate(benchmark::State& state) {
  const int batch = int(state.range(0)), beam = int(state.range(1)), weights = int(state.range(4));
  mt::SessionOptions o;
  o.device = mt::Device::cuda;
  o.allow_tf32 = state.range(2) != 0;
  o.cuda_graphs = state.range(3) != 0;
  o.cuda_int8_gemm = weights == kInt8Gemm;
  o.cuda_fp16 = weights == kFp16;
  o.cuda_device_search = state.range(5) != 0;
  o.max_batch_size = batch;
  o.max_beam_size = beam;
  o.max_source_length = 16;
  o.max_target_length = 16;
  const std::shared_ptr<const mt::Model> model = base_model(weights);  // written and loaded untimed
  const auto created = std::chrono::steady_clock::now();
  auto session = mt::Session::create(model, o);
  const double create_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - created).count();
  if (!session.ok()) {
    state.SkipWithError(session.status().message());
    return;
  }
  const auto src = mt_bench::sources(batch, 15, model->config().source_vocab_size);  // + EOS = 16
  const std::vector<std::span<const int32_t>> spans(src.begin(), src.end());
  mt::TranslateOptions options;
  options.beam_size = beam;
  options.max_decoding_length = 16;
  options.min_decoding_length = 16;
  mt::Translations results;
  // Warm-up: CUDA loads kernels on their first launch.
  if (!session->translate(spans, options, &results).ok()) std::abort();
  for (auto _ : state) {
    if (!session->translate(spans, options, &results).ok()) std::abort();
  }
  state.counters["target_tokens/s"] = benchmark::Counter(16.0 * batch, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["create_ms"] = create_ms;
}

int register_all() {
  auto* b = benchmark::RegisterBenchmark("cuda_translate_16x16/base", BM_CudaTranslate);
  b->ArgNames({"batch", "beam", "tf32", "graphs", "weights", "device_search"});
  for (int tf32 : {0, 1})
    for (int beam : {1, 4})
      for (int batch : {1, 32, 128})
        for (int graphs : {0, 1}) b->Args({batch, beam, tf32, graphs, kFp32, 0});
  // Graphs on: base-int8 on fp32 GEMMs (dequantized weights) and on int8
  // GEMMs; base on fp16 GEMMs.
  for (int weights : {kInt8Dequantized, kInt8Gemm, kFp16})
    for (int beam : {1, 4})
      for (int batch : {1, 32, 128}) b->Args({batch, beam, 0, 1, weights, 0});
  // Beam 4 with its bookkeeping on the device, against the host's above.
  for (int batch : {1, 32, 128}) b->Args({batch, 4, 0, 1, kFp32, 1});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
  return 0;
}

const int registered = register_all();

}  // namespace

int main(int argc, char** argv) {
  // Fail clearly (not as a page of skipped benchmarks) without a usable GPU.
  mt::SessionOptions probe;
  probe.device = mt::Device::cuda;
  probe.max_batch_size = probe.max_source_length = probe.max_target_length = probe.max_beam_size = 1;
  mt::ModelConfig tiny = mt::ModelConfig::preset("tiny").value();
  tiny.source_vocab_size = tiny.target_vocab_size = 64;
  const std::string path = (std::filesystem::temp_directory_path() / "libmt-bench-cuda-probe.mtm").string();
  if (!mt::write_random_model(tiny, 1, path).ok()) return 1;
  auto probe_session = mt::Session::create(mt::Model::load(path).value(), probe);
  if (!probe_session.ok()) {
    std::fprintf(stderr, "bench_cuda_translate: %s\n", probe_session.status().message());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
