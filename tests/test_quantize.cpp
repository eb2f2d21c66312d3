// mt_quantize's library: calibration methods on known distributions, weight
// quantization bounds, and fp32 -> int8 model files that libmt loads and
// runs (tensors, input scales, options, errors, determinism).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "mt/kernels.h"
#include "quantizer.hpp"
#include "test_util.hpp"
#include "weight_quantization.hpp"

using namespace mt;
using namespace mt::quantize;

namespace {

// Lines of random source ids for a model without a vocabulary.
std::vector<std::string> id_lines(int count, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> lines;
  for (int i = 0; i < count; ++i) {
    std::string line;
    const int length = 3 + int(rng() % 12);
    for (int t = 0; t < length; ++t) {
      if (t) line += ' ';
      line += std::to_string(4 + int(rng() % uint32_t(vocab - 4)));
    }
    lines.push_back(line);
  }
  return lines;
}

QuantizeOptions test_options() {
  QuantizeOptions o;
  o.max_length = 24;  // random models rarely stop: keep translations short
  o.batch_size = 8;
  return o;
}

LayerStats stats_of(const std::vector<float>& values) {
  LayerStats s;
  s.observe_range(values.data(), values.size());
  s.freeze();
  s.observe_histogram(values.data(), values.size());
  return s;
}

}  // namespace

TEST_CASE("calibration method names parse and print", "[quantize]") {
  CHECK(MethodChoice::parse("max")->method == Method::max);
  CHECK(MethodChoice::parse("mse")->method == Method::mse);
  CHECK(MethodChoice::parse("entropy")->method == Method::entropy);
  CHECK(MethodChoice::parse("percentile")->percentile == 99.99);
  CHECK(MethodChoice::parse("percentile 99.9")->percentile == 99.9);
  CHECK(MethodChoice::parse("percentile 99.9")->name() == "percentile 99.9");
  for (const char* bad : {"", "min", "percentile x", "percentile 40", "percentile 101", "maxi"}) {
    INFO(bad);
    CHECK_FALSE(MethodChoice::parse(bad).ok());
  }
}

TEST_CASE("an input range maps to a u8 grid on which 0 is exact", "[quantize]") {
  const InputQuantization q = quantization_of({-1.0f, 3.0f});
  CHECK(q.scale == Approx(4.0f / 255.0f));
  CHECK(q.zero_point == 64);  // round(1 / (4 / 255))
  CHECK((0 - q.zero_point) * q.scale == Approx(-1.0f).margin(q.scale));
  CHECK((255 - q.zero_point) * q.scale == Approx(3.0f).margin(q.scale));
  const InputQuantization relu = quantization_of({0.0f, 2.0f});
  CHECK(relu.zero_point == 0);
  CHECK(quantization_of({0.0f, 0.0f}).scale == 1.0f);  // nothing but zeros
  // A range of a few denormals would divide to a scale of 0, which no file may hold.
  CHECK(quantization_of({0.0f, 1e-44f}).scale > 0.0f);
}

TEST_CASE("max keeps the whole range and percentile clips rare outliers", "[quantize]") {
  std::vector<float> v;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) v.push_back(normal(rng));
  v.push_back(40.0f);  // one outlier on each side
  v.push_back(-30.0f);
  const LayerStats s = stats_of(v);
  const InputRange full = s.choose({Method::max, 0});
  CHECK(full.lo == -30.0f);
  CHECK(full.hi == 40.0f);
  CHECK(s.clipped_share(full) == 0.0);
  const InputRange p = s.choose({Method::percentile, 99.9});
  // ~0.1% of a standard normal lies beyond 3.09 on each side.
  CHECK(p.hi > 2.5f);
  CHECK(p.hi < 4.0f);
  CHECK(p.lo < -2.5f);
  CHECK(p.lo > -4.0f);
  CHECK(s.clipped_share(p) == Approx(0.002).epsilon(0.5));
}

TEST_CASE("percentile and entropy drop a far outlier and keep one-sided inputs one-sided", "[quantize]") {
  std::vector<float> v;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) v.push_back(std::max(0.0f, normal(rng)));  // after ReLU
  v.push_back(100.0f);
  const LayerStats s = stats_of(v);
  const InputRange p = s.choose({Method::percentile, 99.99});
  CHECK(p.lo == 0.0f);
  CHECK(p.hi < 10.0f);  // the outlier is not worth the resolution it costs
  CHECK(p.hi > 3.0f);   // the bulk (99.9% below 3.1) is kept
  // Entropy searches ranges of at least a quarter of the observed one.
  const InputRange e = s.choose({Method::entropy, 0});
  CHECK(e.lo == 0.0f);
  CHECK(e.hi < 60.0f);
  // Squared error weighs one value clipped from 100 to ~5 (~9000) above the
  // rounding of all the others on the full range (~1300): mse keeps it.
  CHECK(s.choose({Method::mse, 0}).hi > 80.0f);
}

TEST_CASE("mse clips the long tail of a Laplace distribution", "[quantize]") {
  std::vector<float> v;
  std::mt19937 rng(6);
  std::exponential_distribution<float> expo(1.0f);
  for (int i = 0; i < 200000; ++i) v.push_back((rng() & 1) ? expo(rng) : -expo(rng));
  const LayerStats s = stats_of(v);
  const InputRange full = s.choose({Method::max, 0});
  const InputRange r = s.choose({Method::mse, 0});
  CHECK(r.hi < 0.9f * full.hi);
  CHECK(r.lo > 0.9f * full.lo);
  CHECK(r.hi > 4.0f);  // e^-4: about 2% of the values lie beyond 4
  CHECK(r.lo < -4.0f);
}

TEST_CASE("per-row weight quantization is within half a step and uses the full grid", "[quantize]") {
  const int N = 5, K = 37;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> w(size_t(N) * K);
  for (float& x : w) x = u(rng);
  std::fill(w.begin() + 3 * K, w.begin() + 4 * K, 0.0f);  // a row of zeros
  std::vector<int8_t> q(w.size());
  std::vector<float> scales(N);
  quantize_weight_rows(w, N, K, q, scales);
  for (int n = 0; n < N; ++n) {
    int qmax = 0;
    for (int k = 0; k < K; ++k) {
      const size_t i = size_t(n) * K + k;
      CHECK(std::fabs(w[i] - q[i] * scales[n]) <= scales[n] * 0.5f * 1.0001f);
      CHECK(q[i] >= -127);
      qmax = std::max(qmax, std::abs(int(q[i])));
    }
    CHECK(qmax == (n == 3 ? 0 : 127));
  }
  CHECK(scales[3] == 1.0f);
}

TEST_CASE("fp32 -> int8 model: int8 tensors, input scales for every int8 layer, a quarter of the size", "[quantize]") {
  ModelConfig c = test::tiny_config();
  c.d_ff = 256;
  c.source_vocab_size = c.target_vocab_size = 1000;
  auto fp32 = test::random_model(c, 11);
  const auto lines = id_lines(24, c.source_vocab_size, 1);
  const QuantizeOptions o = test_options();
  auto calibration = calibrate(fp32, lines, o);
  REQUIRE(calibration.ok());
  CHECK(calibration->fp32_translations.size() == lines.size());
  std::vector<LayerReport> report;
  auto bytes = build_int8_model(*fp32, *calibration, o, &report);
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  auto int8 = load_model_bytes(*bytes);
  INFO(int8.status().message());
  REQUIRE(int8.ok());
  const Model& m = **int8;
  CHECK(m.format_version() == 2);  // no version 3 feature: the oldest version that holds it
  CHECK(m.quantization().int8);
  CHECK(m.quantization().activations == ActivationScales::calibrated);
  CHECK(m.quantization().method == o.method.name());
  for (const TensorView& t : m.tensors()) {
    const bool matrix = t.shape.size() == 2;
    INFO(std::string(t.name));
    CHECK((t.dtype == DType::i8) == matrix);
  }
  // One input scale per int8 linear layer: every layer here, "output" included.
  CHECK(m.quantization().inputs.size() == calibration->layers.size());
  CHECK(report.size() == calibration->layers.size());
  for (const LayerReport& r : report) {
    CHECK(r.int8);
    CHECK(r.range.lo <= 0.0f);
    CHECK(r.range.hi >= 0.0f);
  }
  CHECK(double(bytes->size()) < 0.30 * double(fp32->file_size()));
  // The int8 model translates every calibration sentence.
  auto translations = translate_all(*int8, lines, o);
  REQUIRE(translations.ok());
  CHECK(translations->size() == lines.size());
}

TEST_CASE("calibration is deterministic: the same text gives the same file", "[quantize]") {
  const ModelConfig c = test::tiny_config();
  auto fp32 = test::random_model(c, 12);
  const auto lines = id_lines(10, c.source_vocab_size, 2);
  const QuantizeOptions o = test_options();
  auto a = calibrate(fp32, lines, o);
  auto b = calibrate(fp32, lines, o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (Method m : {Method::max, Method::percentile, Method::mse, Method::entropy}) {
    QuantizeOptions om = o;
    om.method.method = m;
    CHECK(*build_int8_model(*fp32, *a, om) == *build_int8_model(*fp32, *b, om));
  }
}

TEST_CASE("layers can be kept fp32 and activations can be dynamic", "[quantize]") {
  const ModelConfig c = test::tiny_config();
  auto fp32 = test::random_model(c, 13);
  const auto lines = id_lines(8, c.source_vocab_size, 3);
  QuantizeOptions o = test_options();
  auto calibration = calibrate(fp32, lines, o);
  REQUIRE(calibration.ok());

  o.keep_fp32 = {"decoder/layer_1", "encoder/layer_0/ffn"};
  auto kept = load_model_bytes(*build_int8_model(*fp32, *calibration, o));
  REQUIRE(kept.ok());
  auto dtype = [&](const Model& m, const char* name) { return m.find_tensor(name)->dtype; };
  CHECK(dtype(**kept, "decoder/layer_1/ffn/linear_0/weight") == DType::f32);
  CHECK(dtype(**kept, "encoder/layer_0/ffn/linear_1/weight") == DType::f32);
  CHECK(dtype(**kept, "encoder/layer_0/self_attention/qkv/weight") == DType::i8);
  CHECK(dtype(**kept, "decoder/layer_0/ffn/linear_0/weight") == DType::i8);
  for (const LayerInputScale& in : (*kept)->quantization().inputs) CHECK(in.layer.rfind("decoder/layer_1", 0) != 0);
  CHECK(translate_all(*kept, lines, o).ok());

  // Tied embeddings: fp32 embeddings keep the output projection fp32 too.
  o.keep_fp32.clear();
  o.fp32_embeddings = true;
  auto embeddings = load_model_bytes(*build_int8_model(*fp32, *calibration, o));
  REQUIRE(embeddings.ok());
  CHECK(dtype(**embeddings, "target_embedding") == DType::f32);
  const auto& inputs = (*embeddings)->quantization().inputs;
  CHECK(std::none_of(inputs.begin(), inputs.end(), [](const LayerInputScale& s) { return s.layer == "output"; }));
  CHECK(translate_all(*embeddings, lines, o).ok());

  o.fp32_embeddings = false;
  o.activations = ActivationScales::dynamic_per_row;
  auto dynamic = load_model_bytes(*build_int8_model(*fp32, *calibration, o));
  REQUIRE(dynamic.ok());
  CHECK((*dynamic)->quantization().activations == ActivationScales::dynamic_per_row);
  CHECK((*dynamic)->quantization().inputs.empty());
  CHECK(translate_all(*dynamic, lines, o).ok());
}

TEST_CASE("int8 translations of a model with a clear preference agree with fp32", "[quantize]") {
  // Random weights give nearly flat logits, where any rounding flips the
  // argmax; scaling the embeddings (the tied output projection) up makes the
  // choices clear, as in a trained model.
  const ModelConfig c = test::tiny_config();
  auto fp32_bytes = random_model_bytes(c, 14);
  REQUIRE(fp32_bytes.ok());
  auto fp32 = load_model_bytes(*fp32_bytes);
  REQUIRE(fp32.ok());
  std::vector<float> emb = (*fp32)->find_tensor("target_embedding")->f32_values();
  for (float& x : emb) x *= 8.0f;
  ModelWriter sharp(c);
  for (const TensorSpec& spec : model_tensor_specs(c)) {
    const auto values = spec.name == "target_embedding" ? emb : (*fp32)->find_tensor(spec.name)->f32_values();
    REQUIRE(sharp.add_tensor(spec.name, spec.shape, spec.layout, values).ok());
  }
  auto sharp_model = load_model_bytes(*sharp.serialize());
  REQUIRE(sharp_model.ok());
  const auto lines = id_lines(40, c.source_vocab_size, 4);
  const QuantizeOptions o = test_options();
  auto calibration = calibrate(*sharp_model, lines, o);
  REQUIRE(calibration.ok());
  auto int8 = load_model_bytes(*build_int8_model(**sharp_model, *calibration, o));
  REQUIRE(int8.ok());
  auto translations = translate_all(*int8, lines, o);
  REQUIRE(translations.ok());
  const Agreement a = agreement(calibration->fp32_translations, *translations);
  INFO("tokens agree " << a.token_rate() << ", sentences " << a.sentence_rate());
  CHECK(a.token_rate() > 0.8);
}

TEST_CASE("quantizing refuses int8 models, empty text and options that keep everything", "[quantize]") {
  const ModelConfig c = test::tiny_config();
  auto fp32 = test::random_model(c, 15);
  QuantizeOptions o = test_options();
  CHECK_FALSE(calibrate(fp32, {}, o).ok());
  auto calibration = calibrate(fp32, id_lines(4, c.source_vocab_size, 5), o);
  REQUIRE(calibration.ok());
  auto int8 = load_model_bytes(*build_int8_model(*fp32, *calibration, o));
  REQUIRE(int8.ok());
  const auto again = calibrate(*int8, id_lines(4, c.source_vocab_size, 5), o);
  REQUIRE_FALSE(again.ok());
  CHECK(std::string(again.status().message()).find("already int8") != std::string::npos);
  CHECK_FALSE(build_int8_model(**int8, *calibration, o).ok());
  o.keep_fp32 = {"encoder", "decoder", "output"};
  o.fp32_embeddings = true;
  CHECK_FALSE(build_int8_model(*fp32, *calibration, o).ok());
  // A line that is not token ids, for a model without a vocabulary.
  CHECK_FALSE(calibrate(fp32, {"1 2 x"}, test_options()).ok());
}

TEST_CASE("row sums are computed at load for dynamic activations and folded into biases for calibrated ones",
          "[quantize]") {
  const ModelConfig c = test::tiny_config();
  auto fp32 = test::random_model(c, 16);
  QuantizeOptions o = test_options();
  auto calibration = calibrate(fp32, id_lines(4, c.source_vocab_size, 6), o);
  REQUIRE(calibration.ok());

  auto calibrated = load_model_bytes(*build_int8_model(*fp32, *calibration, o));
  REQUIRE(calibrated.ok());
  // Calibrated: no row sums (loading reads no weight); biases of layers with
  // a nonzero input zero point differ from fp32 by the compensation.
  int folded = 0;
  for (const LayerInputScale& in : (*calibrated)->quantization().inputs) {
    if (in.zero_point == 0 || in.layer == "output") continue;
    const TensorView* b8 = (*calibrated)->find_tensor(in.layer + "/bias");
    const TensorView* b32 = fp32->find_tensor(in.layer + "/bias");
    REQUIRE(b8 != nullptr);
    folded += std::memcmp(b8->data.data(), b32->data.data(), b8->data.size()) != 0;
  }
  CHECK(folded > 0);
  for (const TensorView& t : (*calibrated)->tensors()) CHECK(t.row_sums.empty());

  o.activations = ActivationScales::dynamic_per_row;
  auto dynamic = load_model_bytes(*build_int8_model(*fp32, *calibration, o));
  REQUIRE(dynamic.ok());
  int checked = 0;
  for (const TensorView& t : (*dynamic)->tensors()) {
    if (t.dtype != DType::i8) continue;
    const int N = int(t.shape[0]), K = int(t.shape[1]);
    REQUIRE(t.row_sums.size() == size_t(N));
    for (int n = 0; n < N; n += 7) {
      int32_t sum = 0;
      for (int k = 0; k < K; ++k) sum += packed_at_i8(t.i8(), K, n, k);
      CHECK(t.row_sums[size_t(n)] == sum);
    }
    ++checked;
  }
  CHECK(checked == 2 * 4 + 2 * 7 + 1);  // linear layers and the shared embedding
  // Dynamic: biases as in fp32.
  const TensorView* b8 = (*dynamic)->find_tensor("encoder/layer_0/ffn/linear_0/bias");
  CHECK(std::memcmp(b8->data.data(), fp32->find_tensor("encoder/layer_0/ffn/linear_0/bias")->data.data(),
                    b8->data.size()) == 0);

  ModelWriter writer(c);
  const std::vector<int8_t> values(6, 1);
  CHECK_FALSE(writer.add_tensor_i8("w", {2, 3}, values, std::vector<float>{1.0f, 0.0f}).ok());
  CHECK_FALSE(writer.add_tensor_i8("w", {2, 3}, values, std::vector<float>{1.0f, NAN}).ok());
  CHECK_FALSE(writer.add_tensor_i8("w", {2, 3}, values, std::vector<float>{1.0f}).ok());
  CHECK(writer.add_tensor_i8("w", {2, 3}, values, std::vector<float>{1.0f, 2.0f}).ok());
}
