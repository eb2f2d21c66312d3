// Runtime benchmarks (docs/performance.md, "Benchmarks"): model load, encoder, one decoder
// step, and whole sentences of 16 source -> exactly 16 target tokens, greedy
// and beam 4, batch 1 and 32, for
//   base, small            random weights, fp32
//   base-int8, small-int8  the same quantized by mt_quantize's library
//                          (calibrated on 8 random sentences; -int8dyn: per-row dynamic scales)
//   en-de-tiny, en-de-tiny-int8   the shipped models (models/), when present
// MT_BENCH_THREADS sets the session threads (default 1); MT_BENCH_MODELS a
// comma-separated subset of the models above.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench_models.hpp"
#include "mt/mt.hpp"
#include "session/session_impl.hpp"
#include "access.hpp"

namespace {

using mt_bench::model_path;
using mt_bench::shipped;
using mt_bench::shipped_path;
using mt_bench::sources;

const char* kModels[] = {"base", "base-int8", "base-int8dyn", "small", "small-int8", "en-de-tiny", "en-de-tiny-int8"};

int bench_threads() {
  const char* env = std::getenv("MT_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 1;
}

bool wanted(const std::string& name) {
  const char* env = std::getenv("MT_BENCH_MODELS");
  if (env == nullptr) return true;
  std::string list = ",", key = ",";
  list += env;
  list += ',';
  key += name;
  key += ',';
  return list.find(key) != std::string::npos;
}

std::shared_ptr<const mt::Model> load(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const mt::Model>> models;
  auto& m = models[name];
  if (!m) m = mt::Model::load(model_path(name)).value();
  return m;
}

mt::Session session_for(const std::string& name, int batch, int beam, int source_length) {
  mt::SessionOptions o;
  o.max_batch_size = batch;
  o.max_beam_size = beam;
  o.max_source_length = source_length + 1;
  o.max_target_length = 16;
  o.num_threads = bench_threads();
  return mt::Session::create(load(name), o).value();
}

void BM_LoadModel(benchmark::State& state, std::string name) {
  model_path(name);
  for (auto _ : state) {
    auto model = mt::Model::load(model_path(name));
    benchmark::DoNotOptimize(model);
  }
}

// Encoder over one sentence of `length` tokens (EOS included).
void BM_Encoder(benchmark::State& state, std::string name) {
  const int length = int(state.range(0));
  mt::Session session = session_for(name, 1, 1, length);
  const auto src = sources(1, length - 1, load(name)->config().source_vocab_size);
  std::span<const int32_t> batch[] = {src[0]};
  mt::Session::Impl& s = *mt::detail::impl_of(session);
  if (!s.load_sources(batch, {}).ok()) std::abort();
  for (auto _ : state) s.encode(1);
  state.counters["tokens/s"] = benchmark::Counter(double(length), benchmark::Counter::kIsIterationInvariantRate);
}

// One incremental decoder step at position 8 for `batch` rows, 16 source tokens.
void BM_DecoderStep(benchmark::State& state, std::string name) {
  const int batch = int(state.range(0));
  mt::Session session = session_for(name, batch, 1, 16);
  const auto src = sources(batch, 15, load(name)->config().source_vocab_size);
  const std::vector<std::span<const int32_t>> spans(src.begin(), src.end());
  mt::Session::Impl& s = *mt::detail::impl_of(session);
  if (!s.load_sources(spans, {}).ok()) std::abort();
  s.encode(batch);
  std::vector<int32_t> tokens(size_t(batch), 7);
  const auto decoder_state = s.decoder_state(1);
  const auto buffers = s.decoder_buffers();
  for (auto _ : state)
    s.transformer->decode_step(tokens.data(), batch, 8, decoder_state, buffers, s.at<float>(s.plan.logits));
  state.counters["rows/s"] = benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
}

// Whole sentences: 16 source tokens -> exactly 16 target tokens.
void BM_Translate(benchmark::State& state, std::string name) {
  const int batch = int(state.range(0)), beam = int(state.range(1));
  mt::Session session = session_for(name, batch, beam, 16);
  const auto src = sources(batch, 15, load(name)->config().source_vocab_size);  // + EOS = 16
  const std::vector<std::span<const int32_t>> spans(src.begin(), src.end());
  mt::TranslateOptions options;
  options.beam_size = beam;
  options.max_decoding_length = 16;
  options.min_decoding_length = 16;
  mt::Translations results;
  for (auto _ : state) {
    if (!session.translate(spans, options, &results).ok()) std::abort();
  }
  state.counters["target_tokens/s"] = benchmark::Counter(16.0 * batch, benchmark::Counter::kIsIterationInvariantRate);
}

std::string read_text(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) std::abort();
  std::string text;
  char buffer[65536];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  return text;
}

// The sentence splitter alone: our 41 paragraphs repeated to 1 MiB.
void BM_SplitSentences(benchmark::State& state, mt::SplitMode mode) {
  const std::string paragraphs = read_text(MT_TEST_DATA_DIR "/ssplit/paragraphs.en");
  std::string text;
  while (text.size() < (size_t(1) << 20)) text += paragraphs;
  static const mt::NonBreakingPrefixes english = *mt::NonBreakingPrefixes::builtin("en");
  const mt::SentenceSplitter splitter(mode, &english);
  size_t sentences = 0;
  for (auto _ : state) {
    sentences = splitter.count(text);
    benchmark::DoNotOptimize(sentences);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["sentences"] = double(sentences);
}

// The same 40 sentences as one text of paragraphs (split, batched,
// reassembled) and as a list through translate_text: the cost of the
// paragraph path is the ratio of the two.
enum class SentencesWay { text, paragraphs, streamed, cached };
void BM_Sentences(benchmark::State& state, std::string name, SentencesWay way) {
  std::vector<std::string> lines;
  std::string text = read_text(MT_TEST_DATA_DIR "/shipped_sentences.en");
  for (size_t at = 0; at < text.size();) {
    const size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  for (char& c : text) c = c == '\n' ? ' ' : c;
  mt::SessionOptions o;
  o.max_batch_size = 8;
  o.max_beam_size = 4;
  mt::Session session = *mt::Session::create(load(name), o);
  const std::vector<std::string_view> views(lines.begin(), lines.end());
  mt::TextTranslations results;
  struct Discard final : mt::ParagraphSink {
    mt::Status write(std::string_view) override { return {}; }
    mt::Status sentence(const mt::TranslatedSentence&) override { return {}; }
  } sink;
  mt::TranslateOptions options;
  options.beam_size = int(state.range(0));
  size_t events = 0, text_bytes = 0;
  auto count = [&](const mt::TokenEvent& e) {
    ++events;
    text_bytes += e.text.size();
    return false;
  };
  if (way == SentencesWay::streamed) options.on_token = mt::TokenCallback::of(count);
  std::shared_ptr<mt::TranslationCache> cache = *mt::TranslationCache::create({64, 0});
  if (way == SentencesWay::cached) options.cache = cache.get();  // filled by the first iteration
  for (auto _ : state) {
    if (way == SentencesWay::paragraphs) {
      if (!session.translate_paragraphs(text, {}, options, &sink).ok()) std::abort();
    } else {
      for (size_t b = 0; b < views.size(); b += 8) {
        if (!session.translate_text(std::span(views).subspan(b, 8), options, &results).ok()) std::abort();
      }
    }
  }
  state.counters["sentences/s"] =
      benchmark::Counter(double(lines.size()), benchmark::Counter::kIsIterationInvariantRate);
}

int register_all() {
  benchmark::RegisterBenchmark("split_sentences/lines", BM_SplitSentences, mt::SplitMode::lines)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("split_sentences/wrapped", BM_SplitSentences, mt::SplitMode::wrapped)
      ->Unit(benchmark::kMillisecond);
  for (const char* c : kModels) {
    const std::string name = c;
    if (!wanted(name) || (shipped(name) && !std::filesystem::exists(shipped_path(name)))) continue;
    benchmark::RegisterBenchmark(("load/" + name).c_str(), BM_LoadModel, name)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("encoder/" + name).c_str(), BM_Encoder, name)
        ->Arg(16)
        ->Arg(64)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("decoder_step/" + name).c_str(), BM_DecoderStep, name)
        ->Arg(1)
        ->Arg(32)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("translate_16x16/" + name).c_str(), BM_Translate, name)
        ->ArgNames({"batch", "beam"})
        ->Args({1, 1})
        ->Args({32, 1})
        ->Args({1, 4})
        ->Args({32, 4})
        ->Unit(benchmark::kMillisecond);
    if (shipped(name)) {
      // Side by side: the paragraph path and the streaming callback against plain translate_text.
      for (const auto& [way, label] : {std::pair{SentencesWay::text, "translate_text"},
                                       std::pair{SentencesWay::paragraphs, "translate_paragraphs"},
                                       std::pair{SentencesWay::streamed, "translate_text_streamed"},
                                       std::pair{SentencesWay::cached, "translate_text_cached"}}) {
        benchmark::RegisterBenchmark(("sentences_40/" + std::string(label) + "/" + name).c_str(), BM_Sentences, name,
                                     way)
            ->ArgName("beam")
            ->Arg(1)
            ->Arg(4)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
