// Model loading: map, verify structure (FlatBuffers verifier), then check the
// contents against the config, then resolve the per-layer weight pointers.
// No weight byte is read here unless LoadOptions::check_weights_finite asks.
#include "mt/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "mapped_file.hpp"
#include "model_generated.h"
#include "model_weights.hpp"
#include "mt/model_spec.hpp"
#include "tokenizer/tokenizer.hpp"

namespace mt {

struct Model::Impl {
  std::optional<detail::MappedFile> file;  // empty for from_buffer
  std::span<const uint8_t> bytes;
  uint32_t format_version = 0;
  ModelConfig config;
  ModelMetadata metadata;
  std::vector<TensorView> tensors;  // sorted by name
  detail::ModelWeights weights;
  std::unique_ptr<const detail::Tokenizer> tokenizer;  // holds the vocabulary
};

namespace {

constexpr size_t kTensorAlignment = 64;

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

Expected<ModelConfig> read_config(const fb::Config& c) {
  auto to_int = [](uint32_t v) { return v > uint32_t(INT32_MAX) ? -1 : int(v); };
  ModelConfig m;
  m.encoder_layers = to_int(c.encoder_layers());
  m.decoder_layers = to_int(c.decoder_layers());
  m.d_model = to_int(c.d_model());
  m.heads = to_int(c.heads());
  m.d_ff = to_int(c.d_ff());
  m.source_vocab_size = to_int(c.source_vocab_size());
  m.target_vocab_size = to_int(c.target_vocab_size());
  m.max_positions = to_int(c.max_positions());
  switch (c.activation()) {
    case fb::Activation::relu: m.activation = Activation::relu; break;
    case fb::Activation::gelu: m.activation = Activation::gelu; break;
    default:
      return Status::error(Errc::invalid_model, "config field 'activation' has unknown value %d",
                           int(c.activation()));
  }
  switch (c.norm_position()) {
    case fb::NormPosition::post: m.pre_norm = false; break;
    case fb::NormPosition::pre: m.pre_norm = true; break;
    default:
      return Status::error(Errc::invalid_model, "config field 'norm_position' has unknown value %d",
                           int(c.norm_position()));
  }
  m.layer_norm_epsilon = c.layer_norm_epsilon();
  m.shared_embeddings = c.shared_embeddings();
  m.tied_output = c.tied_output();
  m.pad_id = c.pad_id();
  m.bos_id = c.bos_id();
  m.eos_id = c.eos_id();
  m.unk_id = c.unk_id();
  MT_RETURN_IF_ERROR(m.validate());
  return m;
}

// Structure of one tensor: name, rank, dtype, layout and that the data vector
// holds exactly the bytes they imply, aligned for in-place use.
Status check_tensor(const fb::Tensor& t, const uint8_t* file_base, TensorView* view) {
  const std::string_view name = t.name()->string_view();
  const char* n = name.data();
  const int nl = int(name.size());
  if (name.empty()) return Status::error(Errc::invalid_model, "a tensor has an empty name");
  const auto* shape = t.shape();
  if (shape->size() < 1 || shape->size() > 2) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' has rank %u (expected 1 or 2)", nl, n,
                         shape->size());
  }
  uint64_t count = 1;
  for (uint32_t d : *shape) {
    if (d == 0) return Status::error(Errc::invalid_model, "tensor '%.*s' has a zero dimension", nl, n);
    count *= d;  // rank <= 2 and dims < 2^32: no overflow
  }
  if (t.dtype() != fb::DType::f32) {
    return Status::error(Errc::invalid_model,
                         "tensor '%.*s' has dtype %d; this libmt runs fp32 models only", nl, n,
                         int(t.dtype()));
  }
  uint64_t expected_bytes = count * sizeof(float);
  if (t.layout() == fb::Layout::packed_n16) {
    if (shape->size() != 2) {
      return Status::error(Errc::invalid_model, "tensor '%.*s' is packed but not 2-D", nl, n);
    }
    expected_bytes = packed_size(int(shape->Get(0)), int(shape->Get(1))) * sizeof(float);
  } else if (t.layout() != fb::Layout::row_major) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' has unknown layout %d", nl, n,
                         int(t.layout()));
  }
  const auto* data = t.data();
  if (data->size() != expected_bytes) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' holds %u bytes, its shape needs %llu",
                         nl, n, data->size(), static_cast<unsigned long long>(expected_bytes));
  }
  const size_t offset = size_t(data->data() - file_base);
  if (offset % kTensorAlignment != 0 ||
      reinterpret_cast<uintptr_t>(data->data()) % alignof(float) != 0) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' data is not 64-byte aligned", nl, n);
  }
  if (t.scales() != nullptr && t.scales()->size() != 0) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' is fp32 but has scales", nl, n);
  }
  view->name = name;
  view->shape = {shape->data(), shape->size()};
  view->dtype = DType::f32;
  view->layout = t.layout() == fb::Layout::packed_n16 ? Layout::packed_n16 : Layout::row_major;
  view->data = {data->data(), data->size()};
  return {};
}

const TensorView* find_in(const std::vector<TensorView>& tensors, std::string_view name) {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorView& t, std::string_view key) { return t.name < key; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

// Every tensor the config needs is present with the right shape and layout, and nothing else.
Status check_against_spec(const ModelConfig& config, const std::vector<TensorView>& tensors) {
  const std::vector<TensorSpec> specs = model_tensor_specs(config);
  for (const TensorSpec& spec : specs) {
    const TensorView* t = find_in(tensors, spec.name);
    if (t == nullptr) {
      return Status::error(Errc::invalid_model, "required tensor '%s' is missing", spec.name.c_str());
    }
    const bool same_shape = std::equal(spec.shape.begin(), spec.shape.end(), t->shape.begin(),
                                       t->shape.end());
    if (!same_shape) {
      char got[64], want[64];
      auto fmt = [](char* out, auto dims) {
        int len = std::snprintf(out, 64, "[");
        for (size_t i = 0; i < dims.size() && len < 48; ++i)
          len += std::snprintf(out + len, 64 - len, i ? ", %u" : "%u", unsigned(dims[i]));
        std::snprintf(out + len, 64 - len, "]");
      };
      fmt(got, t->shape);
      fmt(want, std::span<const uint32_t>(spec.shape));
      return Status::error(Errc::invalid_model, "tensor '%s' has shape %s, the config needs %s",
                           spec.name.c_str(), got, want);
    }
    if (t->layout != spec.layout) {
      return Status::error(Errc::invalid_model, "tensor '%s' has layout %s, expected %s",
                           spec.name.c_str(), t->layout == Layout::packed_n16 ? "packed_n16" : "row_major",
                           spec.layout == Layout::packed_n16 ? "packed_n16" : "row_major");
    }
  }
  if (tensors.size() != specs.size()) {
    for (const TensorView& t : tensors) {
      const bool known = std::any_of(specs.begin(), specs.end(),
                                     [&](const TensorSpec& s) { return s.name == t.name; });
      if (!known) {
        return Status::error(Errc::invalid_model, "unexpected tensor '%.*s' for this config",
                             int(t.name.size()), t.name.data());
      }
    }
  }
  return {};
}

Status check_finite(const std::vector<TensorView>& tensors) {
  for (const TensorView& t : tensors) {
    const float* v = t.f32();
    const size_t n = t.data.size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(v[i])) {
        return Status::error(Errc::invalid_model, "tensor '%.*s' holds a %s at element %zu",
                             int(t.name.size()), t.name.data(), std::isnan(v[i]) ? "NaN" : "Inf", i);
      }
    }
  }
  return {};
}

detail::ModelWeights resolve_weights(const ModelConfig& cfg, const std::vector<TensorView>& tensors) {
  auto f32 = [&](const std::string& name) { return find_in(tensors, name)->f32(); };
  auto linear = [&](const std::string& scope, int n, int k) {
    return detail::Linear{f32(scope + "/weight"), f32(scope + "/bias"), n, k};
  };
  auto norm = [&](const std::string& scope) {
    return detail::Norm{f32(scope + "/gamma"), f32(scope + "/beta")};
  };
  const int C = cfg.d_model, F = cfg.d_ff;
  detail::ModelWeights w;
  w.target_embedding = f32("target_embedding");
  w.source_embedding = cfg.shared_embeddings ? w.target_embedding : f32("source_embedding");
  w.output = {cfg.tied_output ? w.target_embedding : f32("output/weight"), f32("output/bias"),
              cfg.target_vocab_size, C};
  for (int i = 0; i < cfg.encoder_layers; ++i) {
    const std::string l = "encoder/layer_" + std::to_string(i);
    w.encoder.push_back({linear(l + "/self_attention/qkv", 3 * C, C),
                         linear(l + "/self_attention/out", C, C), linear(l + "/ffn/linear_0", F, C),
                         linear(l + "/ffn/linear_1", C, F), norm(l + "/self_attention/norm"),
                         norm(l + "/ffn/norm")});
  }
  for (int i = 0; i < cfg.decoder_layers; ++i) {
    const std::string l = "decoder/layer_" + std::to_string(i);
    w.decoder.push_back({linear(l + "/self_attention/qkv", 3 * C, C),
                         linear(l + "/self_attention/out", C, C),
                         linear(l + "/cross_attention/q", C, C),
                         linear(l + "/cross_attention/kv", 2 * C, C),
                         linear(l + "/cross_attention/out", C, C), linear(l + "/ffn/linear_0", F, C),
                         linear(l + "/ffn/linear_1", C, F), norm(l + "/self_attention/norm"),
                         norm(l + "/cross_attention/norm"), norm(l + "/ffn/norm")});
  }
  if (cfg.pre_norm) {
    w.encoder_norm = norm("encoder/norm");
    w.decoder_norm = norm("decoder/norm");
  }
  return w;
}

ModelMetadata read_metadata(const fb::Metadata* m) {
  ModelMetadata out;
  if (m == nullptr) return out;
  out.source_language = str(m->source_language());
  out.target_language = str(m->target_language());
  out.training_corpus = str(m->training_corpus());
  out.tool = str(m->tool());
  out.tool_version = str(m->tool_version());
  out.created = str(m->created());
  if (m->extra()) {
    for (const fb::KeyValue* kv : *m->extra()) out.extra.push_back({kv->key()->str(), str(kv->value())});
  }
  return out;
}

VocabularyData read_vocabulary(const fb::Vocabulary& v) {
  VocabularyData out;
  out.type = static_cast<VocabularyType>(v.type());
  if (v.pieces()) {
    out.pieces.reserve(v.pieces()->size());
    for (const fb::Piece* p : *v.pieces()) {
      out.pieces.push_back({p->text()->str(), p->score(), static_cast<PieceType>(p->type())});
    }
  }
  if (v.precompiled_charsmap()) {
    out.precompiled_charsmap.assign(v.precompiled_charsmap()->begin(), v.precompiled_charsmap()->end());
  }
  out.normalization_name = str(v.normalization_name());
  out.add_dummy_prefix = v.add_dummy_prefix();
  out.remove_extra_whitespaces = v.remove_extra_whitespaces();
  out.escape_whitespaces = v.escape_whitespaces();
  out.byte_fallback = v.byte_fallback();
  out.treat_whitespace_as_suffix = v.treat_whitespace_as_suffix();
  if (v.unk_surface()) out.unk_surface = v.unk_surface()->str();
  out.normalized_expansion = v.normalized_expansion();
  return out;
}

// The vocabulary is the tokenizer of both sides: one joint vocabulary whose
// ids are the model's, special pieces where the config says.
Status check_vocabulary(const ModelConfig& config, const VocabularyData& v) {
  const int size = int(v.pieces.size());
  if (size != config.source_vocab_size || size != config.target_vocab_size) {
    return Status::error(Errc::invalid_model,
                         "vocabulary has %d pieces but the config's vocabulary sizes are %d (source) and %d (target)",
                         size, config.source_vocab_size, config.target_vocab_size);
  }
  const struct { const char* name; int id; PieceType type; } specials[] = {
      {"unk_id", config.unk_id, PieceType::unknown},
      {"bos_id", config.bos_id, PieceType::control},
      {"eos_id", config.eos_id, PieceType::control}};
  for (const auto& s : specials) {
    if (v.pieces[size_t(s.id)].type != s.type) {
      return Status::error(Errc::invalid_model, "config field '%s' = %d names vocabulary piece '%s', which is not a %s piece",
                           s.name, s.id, v.pieces[size_t(s.id)].text.c_str(),
                           s.type == PieceType::unknown ? "unknown" : "control");
    }
  }
  return {};
}

Status parse(Model::Impl& impl, const LoadOptions& options) {
  const std::span<const uint8_t> bytes = impl.bytes;
  if (bytes.size() < 8) {
    return Status::error(Errc::corrupt_model, "model file is %zu bytes, too short to be a libmt model",
                         bytes.size());
  }
  if (!fb::ModelBufferHasIdentifier(bytes.data())) {
    char id[5] = {};
    for (int i = 0; i < 4; ++i) id[i] = std::isprint(bytes[4 + i]) ? char(bytes[4 + i]) : '?';
    return Status::error(Errc::corrupt_model,
                         "not a libmt model file: identifier '%s', expected '%s'", id,
                         fb::ModelIdentifier());
  }
  if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Status::error(Errc::corrupt_model, "model file of %zu bytes exceeds the 2 GiB format limit",
                         bytes.size());
  }
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!fb::VerifyModelBuffer(verifier)) {
    return Status::error(Errc::corrupt_model,
                         "model file failed structural verification (truncated or corrupt, %zu bytes)",
                         bytes.size());
  }
  const fb::Model* model = fb::GetModel(bytes.data());
  impl.format_version = model->format_version();
  if (impl.format_version == 0 || impl.format_version > kModelFormatVersion) {
    return Status::error(Errc::unsupported_version,
                         "model format version %u is not supported (this libmt reads 1 to %u)",
                         impl.format_version, kModelFormatVersion);
  }
  auto config = read_config(*model->config());
  if (!config) return config.status();
  impl.config = config.value();

  impl.tensors.resize(model->tensors()->size());
  for (uint32_t i = 0; i < model->tensors()->size(); ++i) {
    MT_RETURN_IF_ERROR(check_tensor(*model->tensors()->Get(i), bytes.data(), &impl.tensors[i]));
    if (i > 0 && !(impl.tensors[i - 1].name < impl.tensors[i].name)) {
      const auto& name = impl.tensors[i].name;
      return Status::error(Errc::invalid_model, "tensor '%.*s' is duplicated or out of order",
                           int(name.size()), name.data());
    }
  }
  MT_RETURN_IF_ERROR(check_against_spec(impl.config, impl.tensors));
  if (options.check_weights_finite) MT_RETURN_IF_ERROR(check_finite(impl.tensors));
  impl.weights = resolve_weights(impl.config, impl.tensors);
  impl.metadata = read_metadata(model->metadata());
  if (model->vocabulary() != nullptr && model->vocabulary()->type() != fb::VocabularyType::none) {
    auto tokenizer = detail::Tokenizer::create(read_vocabulary(*model->vocabulary()));  // validates it
    if (!tokenizer) return tokenizer.status();
    MT_RETURN_IF_ERROR(check_vocabulary(impl.config, (*tokenizer)->vocabulary()));
    impl.tokenizer = std::move(tokenizer.value());
  }
  return {};
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

Expected<std::shared_ptr<const Model>> Model::load(const std::string& path, const LoadOptions& options) {
  auto file = detail::MappedFile::open(path);
  if (!file) return file.status();
  auto impl = std::make_unique<Impl>();
  impl->file.emplace(std::move(file.value()));
  impl->bytes = impl->file->bytes();
  Status status = parse(*impl, options);
  if (!status.ok()) {
    return Status::error(status.code(), "%s: %s", path.c_str(), status.message());
  }
  return std::shared_ptr<const Model>(new Model(std::move(impl)));
}

Expected<std::shared_ptr<const Model>> Model::from_buffer(std::span<const uint8_t> bytes,
                                                          const LoadOptions& options) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % kTensorAlignment != 0) {
    return Status::error(Errc::invalid_argument, "model buffer must be 64-byte aligned");
  }
  auto impl = std::make_unique<Impl>();
  impl->bytes = bytes;
  MT_RETURN_IF_ERROR(parse(*impl, options));
  return std::shared_ptr<const Model>(new Model(std::move(impl)));
}

const ModelConfig& Model::config() const { return impl_->config; }
const ModelMetadata& Model::metadata() const { return impl_->metadata; }
uint32_t Model::format_version() const { return impl_->format_version; }
size_t Model::file_size() const { return impl_->bytes.size(); }
std::span<const TensorView> Model::tensors() const { return impl_->tensors; }
const TensorView* Model::find_tensor(std::string_view name) const { return find_in(impl_->tensors, name); }
std::span<const uint8_t> Model::bytes() const { return impl_->bytes; }
const detail::ModelWeights& Model::weights() const { return impl_->weights; }
const VocabularyData* Model::vocabulary() const {
  return impl_->tokenizer ? &impl_->tokenizer->vocabulary() : nullptr;
}
const detail::Tokenizer* Model::tokenizer() const { return impl_->tokenizer.get(); }

}  // namespace mt
