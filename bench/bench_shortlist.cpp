// The vocabulary shortlist's speed, side by side in one run: each model with
// a random shortlist (K ids per source id, 100 frequent ids: mt_shortlist
// random's), the same session options with SessionOptions::shortlist on and
// off, timed in alternation (so a busy neighbour slows both alike), 16 random
// source tokens -> exactly 16 target tokens.
//
//   bench_shortlist [--k 50] [--rounds 7] [--models opus-mt-int8,base-int8,en-de-tiny-int8]
//
// Models: opus-mt-int8 is OPUS-MT's shape (d 512, 6+6 layers, 8 heads, d_ff
// 2048, swish, shared and tied embeddings, vocabulary 58,101) with random
// weights, quantized as the other -int8 models (bench_models.hpp); base-int8
// the random "base" config (vocabulary 32,000); en-de-tiny-int8 the shipped
// model (8,000). Prints a Markdown table: ms per sentence without and with
// the shortlist (median of the rounds), target tokens/s with it, and the
// speed-up.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_models.hpp"
#include "mt/mt.hpp"
#include "shortlist/lexical_table.hpp"

namespace {

using Clock = std::chrono::steady_clock;

std::string opus_mt_path() {
  const std::string fp32 = (std::filesystem::temp_directory_path() / "libmt-bench-opus-mt.mtm").string();
  const std::string int8 = (std::filesystem::temp_directory_path() / "libmt-bench-opus-mt-int8.mtm").string();
  if (!std::filesystem::exists(fp32)) {
    mt::ModelConfig c;
    c.d_model = 512, c.heads = 8, c.d_ff = 2048, c.encoder_layers = c.decoder_layers = 6;
    c.source_vocab_size = c.target_vocab_size = 58101;
    c.max_positions = 512;
    c.activation = mt::Activation::swish;
    c.shared_embeddings = c.tied_output = true;
    if (!mt::write_random_model(c, 1, fp32).ok()) std::abort();
  }
  mt_bench::write_int8(fp32, int8, false);
  return int8;
}

std::string path_of(const std::string& name) {
  if (name == "opus-mt-int8") return opus_mt_path();
  return mt_bench::model_path(name);
}

// The model with a random shortlist, written to the temporary folder (never
// beside a shipped model in models/).
std::shared_ptr<const mt::Model> with_random_shortlist(const std::string& path, int k) {
  auto model = mt::Model::load(path).value();
  const mt::ModelConfig& c = model->config();
  auto writer = mt::ModelWriter::from_model(*model).value();
  mt::ShortlistData s = mt::shortlist::random_shortlist(c.source_vocab_size, c.target_vocab_size, k, 100, 1);
  s.method = "random";
  writer.set_shortlist(s);
  const std::string out = (std::filesystem::temp_directory_path() /
                           (std::filesystem::path(path).filename().string() + ".shortlist-" + std::to_string(k) + ".mtm"))
                              .string();
  if (!writer.write(out).ok()) std::abort();
  return mt::Model::load(out).value();
}

struct Workload {
  int batch, beam;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int k = 50, rounds = 7;
  std::string models = "opus-mt-int8,base-int8,en-de-tiny-int8";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--k") == 0) k = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--models") == 0) models = argv[i + 1];
  }
  std::printf("| model | vocabulary | search | batch | ms/sentence, whole vocabulary | ms/sentence, shortlist K=%d | "
              "target tokens/s, shortlist | speed-up |\n|---|---|---|---|---|---|---|---|\n",
              k);
  const Workload workloads[] = {{1, 1}, {1, 4}, {32, 1}};
  for (size_t at = 0; at <= models.size();) {
    const size_t comma = std::min(models.find(',', at), models.size());
    const std::string name = models.substr(at, comma - at);
    at = comma + 1;
    if (name.empty()) continue;
    const auto model = with_random_shortlist(path_of(name), k);
    const int V = model->config().target_vocab_size;
    for (const Workload w : workloads) {
      mt::SessionOptions o;
      o.max_batch_size = w.batch;
      o.max_beam_size = w.beam;
      o.max_source_length = 16;
      o.max_target_length = 16;
      o.num_threads = 1;
      mt::Session whole = [&] {
        o.shortlist = false;
        return mt::Session::create(model, o).value();
      }();
      o.shortlist = true;
      mt::Session listed = mt::Session::create(model, o).value();
      // Enough sentences for about a second a round without the shortlist.
      const int sentences = w.batch == 1 ? (V > 10000 ? 24 : 200) : 64;
      const auto src = mt_bench::sources(sentences, 15, model->config().source_vocab_size);
      mt::TranslateOptions options;
      options.beam_size = w.beam;
      options.min_decoding_length = options.max_decoding_length = 16;
      mt::Translations results;
      const auto pass = [&](mt::Session& session) {
        const auto start = Clock::now();
        for (int b = 0; b < sentences; b += w.batch) {
          std::vector<std::span<const int32_t>> spans;
          for (int i = b; i < std::min(sentences, b + w.batch); ++i) spans.push_back(src[size_t(i)]);
          if (!session.translate(spans, options, &results).ok()) std::abort();
        }
        return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / sentences;
      };
      pass(whole), pass(listed);  // warm: pages mapped, caches filled
      std::vector<double> a, b;
      for (int r = 0; r < rounds; ++r) a.push_back(pass(whole)), b.push_back(pass(listed));
      const double ms_whole = median(a), ms_listed = median(b);
      std::printf("| %s | %d | %s | %d | %.3f | %.3f | %.0f | %.2fx |\n", name.c_str(), V,
                  w.beam == 1 ? "greedy" : "beam 4", w.batch, ms_whole, ms_listed, 16.0 * 1000.0 / ms_listed,
                  ms_whole / ms_listed);
      std::fflush(stdout);
    }
  }
  return 0;
}
