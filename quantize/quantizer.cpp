#include "quantizer.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <sstream>

#include "model/model_weights.hpp"
#include "mt/model_spec.hpp"
#include "mt/model_writer.hpp"
#include "mt/session.hpp"
#include "mt/version.hpp"
#include "session/session_impl.hpp"
#include "weight_quantization.hpp"
#include "access.hpp"

namespace mt::quantize {

namespace {

// Feeds every linear layer's input to its LayerStats: ranges in pass 1,
// histograms in pass 2.
class StatsObserver : public detail::LinearObserver {
 public:
  StatsObserver(std::vector<LayerStats>& stats, bool histogram) : stats_(stats), histogram_(histogram) {}
  void observe(const detail::Linear& layer, const float* x, int M, int K) override {
    LayerStats& s = stats_[size_t(layer.index)];
    if (histogram_)
      s.observe_histogram(x, size_t(M) * size_t(K));
    else
      s.observe_range(x, size_t(M) * size_t(K));
  }

 private:
  std::vector<LayerStats>& stats_;
  bool histogram_;
};

bool parse_ids(const std::string& line, std::vector<int32_t>* ids) {
  ids->clear();
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > INT32_MAX) return false;
    ids->push_back(int32_t(v));
  }
  return true;
}

// Greedy translation of all sentences in batches, with an optional observer.
Expected<std::vector<std::string>> run_translations(std::shared_ptr<const Model> model,
                                                    const std::vector<std::string>& sentences, const QuantizeOptions& o,
                                                    const Progress& progress, const char* phase,
                                                    detail::LinearObserver* observer) {
  SessionOptions so;
  so.max_batch_size = std::max(1, o.batch_size);
  so.max_source_length = std::min(o.max_length, model->config().max_positions);
  so.max_target_length = so.max_source_length;
  so.max_beam_size = 1;
  so.num_threads = std::max(1, o.threads);
  so.thread_split = ThreadSplit::layers;  // one transformer for the observer, which is not thread-safe
  so.max_text_bytes = 1 << 16;
  auto session = Session::create(model, so);
  if (!session) return session.status();
  MT_RETURN_IF_ERROR(detail::set_linear_observer(*session, observer));
  TranslateOptions to;
  to.truncate_long_sources = true;
  // As mt_train's dev translations: a weak model's runaway repetitions
  // neither calibrate nor score anything useful.
  to.max_length_ratio = 2.0f;
  to.max_length_offset = 10;
  const bool text = model->has_vocabulary();
  std::vector<std::string> out;
  out.reserve(sentences.size());
  std::vector<std::vector<int32_t>> ids(size_t(so.max_batch_size));
  for (size_t b = 0; b < sentences.size(); b += size_t(so.max_batch_size)) {
    const size_t n = std::min(sentences.size() - b, size_t(so.max_batch_size));
    if (text) {
      std::vector<std::string_view> batch(sentences.begin() + b, sentences.begin() + b + n);
      TextTranslations results;
      MT_RETURN_IF_ERROR(session->translate_text(batch, to, &results));
      for (size_t i = 0; i < n; ++i) out.emplace_back(results[i][0].text);
    } else {
      std::vector<std::span<const int32_t>> batch;
      for (size_t i = 0; i < n; ++i) {
        if (!parse_ids(sentences[b + i], &ids[i])) {
          return Status::error(Errc::invalid_argument,
                               "calibration line %zu is not token ids (the model has no vocabulary)", b + i + 1);
        }
        if (ids[i].size() >= size_t(so.max_source_length)) ids[i].resize(size_t(so.max_source_length) - 1);
        batch.emplace_back(ids[i]);
      }
      Translations results;
      MT_RETURN_IF_ERROR(session->translate(batch, to, &results));
      for (size_t i = 0; i < n; ++i) {
        std::string line;
        for (int32_t t : results[i][0].tokens) {
          if (!line.empty()) line += ' ';
          line += std::to_string(t);
        }
        out.push_back(std::move(line));
      }
    }
    if (progress) progress(phase, b + n, sentences.size());
  }
  return out;
}

bool starts_with_any(const std::string& scope, const std::vector<std::string>& prefixes) {
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](const std::string& p) { return !p.empty() && scope.rfind(p, 0) == 0; });
}

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

Expected<Calibration> calibrate(std::shared_ptr<const Model> fp32, const std::vector<std::string>& sentences,
                                const QuantizeOptions& options, const Progress& progress) {
  if (fp32->quantization().int8) {
    return Status::error(Errc::invalid_argument, "the model is already int8; mt_quantize reads fp32 models");
  }
  if (sentences.empty()) return Status::error(Errc::invalid_argument, "the calibration text is empty");
  Calibration c;
  c.layers = detail::weights_of(*fp32).linear_names;
  c.stats.resize(c.layers.size());
  StatsObserver ranges(c.stats, false);
  auto translations = run_translations(fp32, sentences, options, progress, "calibrating (1/2)", &ranges);
  if (!translations) return translations.status();
  c.fp32_translations = std::move(translations.value());
  for (LayerStats& s : c.stats) s.freeze();
  StatsObserver histograms(c.stats, true);
  auto again = run_translations(fp32, sentences, options, progress, "calibrating (2/2)", &histograms);
  if (!again) return again.status();
  return c;
}

Expected<std::vector<std::string>> translate_all(std::shared_ptr<const Model> model,
                                                 const std::vector<std::string>& sentences,
                                                 const QuantizeOptions& options, const Progress& progress,
                                                 const char* phase) {
  return run_translations(std::move(model), sentences, options, progress, phase, nullptr);
}

Expected<std::vector<uint8_t>> build_int8_model(const Model& fp32, const Calibration& calibration,
                                                const QuantizeOptions& o, std::vector<LayerReport>* report) {
  const ModelConfig& cfg = fp32.config();
  if (fp32.quantization().int8) {
    return Status::error(Errc::invalid_argument, "the model is already int8; mt_quantize reads fp32 models");
  }
  // Which tensors become int8. The tied output projection is the target
  // embedding: one decision for both.
  const bool tied_kept = cfg.tied_output && starts_with_any("output", o.keep_fp32);
  auto int8_tensor = [&](const TensorSpec& spec) {
    if (spec.role == TensorRole::embedding) {
      if (o.fp32_embeddings) return false;
      return !(spec.name == "target_embedding" && tied_kept);
    }
    if (spec.role != TensorRole::weight) return false;
    const std::string scope = spec.name.substr(0, spec.name.size() - std::string("/weight").size());
    return !starts_with_any(scope, o.keep_fp32);
  };

  const bool output_int8 =
      cfg.tied_output ? !(o.fp32_embeddings || tied_kept) : !starts_with_any("output", o.keep_fp32);
  auto layer_int8 = [&](const std::string& scope) {
    return scope == "output" ? output_int8 : !starts_with_any(scope, o.keep_fp32);
  };
  // The scope of the linear layer a weight tensor serves ("" for none): the
  // tied output projection is the target embedding.
  auto layer_of = [&](const TensorSpec& spec) -> std::string {
    if (spec.role == TensorRole::embedding) return spec.name == "target_embedding" && cfg.tied_output ? "output" : "";
    return spec.name.substr(0, spec.name.rfind('/'));
  };

  // Input quantization of the int8 linear layers, chosen from the statistics.
  ModelQuantization quantization;
  quantization.activations = o.activations;
  if (o.activations == ActivationScales::calibrated) quantization.method = o.method.name();
  std::map<std::string, InputQuantization> inputs;
  if (report) report->clear();
  for (size_t i = 0; i < calibration.layers.size(); ++i) {
    const std::string& scope = calibration.layers[i];
    const LayerStats& s = calibration.stats[i];
    LayerReport r;
    r.layer = scope;
    r.int8 = layer_int8(scope);
    r.min = s.min(), r.max = s.max();
    r.range = s.choose(o.method);
    r.input = quantization_of(r.range);
    r.clipped = s.clipped_share(r.range);
    if (r.int8 && o.activations == ActivationScales::calibrated) {
      quantization.inputs.push_back({scope, r.input.scale, r.input.zero_point});
      inputs[scope] = r.input;
    }
    if (report) report->push_back(r);
  }

  // A calibrated layer's zero-point compensation, zero * scale * w_scale[n] *
  // sum_k q[n, k], is the same for every input: it goes into the bias, and
  // the runtime multiplies without it (no row sums at load).
  std::map<std::string, std::vector<double>> compensation;  // by layer scope
  ModelWriter writer(cfg);
  ModelMetadata metadata = fp32.metadata();
  if (const VocabularyData* v = fp32.vocabulary()) writer.set_vocabulary(*v);
  if (const VocabularyData* v = fp32.target_vocabulary()) writer.set_target_vocabulary(*v);
  if (const ShortlistView* s = fp32.shortlist()) writer.set_shortlist(s->to_data());
  bool any_int8 = false;
  for (const TensorSpec& spec : model_tensor_specs(cfg)) {
    const TensorView* t = fp32.find_tensor(spec.name);
    if (t == nullptr) return Status::error(Errc::invalid_model, "tensor '%s' is missing", spec.name.c_str());
    std::vector<float> values = t->f32_values();
    if (spec.role == TensorRole::bias) {
      const auto c = compensation.find(spec.name.substr(0, spec.name.rfind('/')));
      if (c != compensation.end()) {
        for (size_t n = 0; n < values.size(); ++n) values[n] = float(double(values[n]) - c->second[n]);
      }
    }
    if (!int8_tensor(spec)) {
      MT_RETURN_IF_ERROR(writer.add_tensor(spec.name, spec.shape, spec.layout, values));
      continue;
    }
    const int N = int(spec.shape[0]), K = int(spec.shape[1]);
    std::vector<int8_t> q(values.size());
    std::vector<float> scales(static_cast<size_t>(N));
    quantize_weight_rows(values, N, K, q, scales);
    MT_RETURN_IF_ERROR(writer.add_tensor_i8(spec.name, spec.shape, q, scales));
    any_int8 = true;
    const auto in = inputs.find(layer_of(spec));
    if (in != inputs.end() && in->second.zero_point != 0) {
      std::vector<double>& c = compensation[in->first];
      c.assign(size_t(N), 0.0);
      for (int n = 0; n < N; ++n) {
        int64_t sum = 0;
        for (int k = 0; k < K; ++k) sum += q[size_t(n) * K + k];
        c[size_t(n)] =
            double(in->second.zero_point) * double(in->second.scale) * double(scales[size_t(n)]) * double(sum);
      }
    }
  }
  if (!any_int8) return Status::error(Errc::invalid_argument, "the options keep every layer fp32: nothing to quantize");
  writer.set_quantization(quantization);
  metadata.tool = "mt_quantize";
  metadata.tool_version = kVersion;
  metadata.extra.push_back({"quantization", o.activations == ActivationScales::calibrated
                                                ? "int8, calibrated activations (" + o.method.name() + ")"
                                                : "int8, dynamic per-row activations"});
  metadata.extra.push_back({"calibration_sentences", std::to_string(calibration.fp32_translations.size())});
  writer.set_metadata(metadata);
  return writer.serialize();
}

Expected<std::shared_ptr<const Model>> load_model_bytes(std::span<const uint8_t> bytes) {
  struct Holder {
    std::unique_ptr<uint8_t, void (*)(uint8_t*)> buffer{nullptr, [](uint8_t*) {}};
    std::shared_ptr<const Model> model;  // destroyed before the buffer
  };
  auto holder = std::make_shared<Holder>();
  auto* block = static_cast<uint8_t*>(::operator new(bytes.size(), std::align_val_t(kBufferAlignment), std::nothrow));
  if (block == nullptr) return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes", bytes.size());
  holder->buffer = {block, [](uint8_t* p) { ::operator delete(p, std::align_val_t(kBufferAlignment)); }};
  std::memcpy(block, bytes.data(), bytes.size());
  auto model = Model::from_buffer({block, bytes.size()});
  if (!model) return model.status();
  holder->model = std::move(model.value());
  return std::shared_ptr<const Model>(holder, holder->model.get());
}

Agreement agreement(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  Agreement g;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    ++g.sentences;
    if (a[i] == b[i]) ++g.identical;
    const auto wa = split_words(a[i]), wb = split_words(b[i]);
    g.tokens += std::max(wa.size(), wb.size());
    for (size_t j = 0; j < std::min(wa.size(), wb.size()); ++j) g.matching += wa[j] == wb[j];
  }
  return g;
}

}  // namespace mt::quantize
