// Model loading: map, verify structure (FlatBuffers verifier), then check the
// contents against the config, then resolve the per-layer weight pointers.
// No weight byte is read here unless LoadOptions::check_weights_finite asks.
#include "mt/model.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>

#include "support/alignment.hpp"
#include "support/atomic_file.hpp"
#include "cuda/cuda_weights.hpp"
#include "model/format_version.hpp"
#include "support/content_hash.hpp"
#include "support/mapped_file.hpp"
#include "model_generated.h"
#include "model/model_shortlist.hpp"
#include "model/model_weights.hpp"
#include "mt/kernels.h"  // unpack_weights_f32
#include "mt/model_spec.hpp"
#include "mt/sentence_splitter.hpp"
#include "text/model_prefixes.hpp"
#include "tokenizer/tokenizer.hpp"

namespace mt {

std::vector<float> TensorView::f32_values() const {
  size_t count = 1;
  for (uint32_t d : shape) count *= d;
  std::vector<float> values(count);
  if (layout == Layout::packed_n16) {
    unpack_weights_f32(f32(), int(shape[0]), int(shape[1]), values.data());
  } else {
    std::memcpy(values.data(), f32(), count * sizeof(float));
  }
  return values;
}

struct Model::Impl {
  std::optional<detail::MappedFile> file;  // empty for from_buffer
  std::span<const uint8_t> bytes;
  uint32_t format_version = 0;
  ModelConfig config;
  ModelMetadata metadata;
  ModelQuantization quantization;
  std::vector<TensorView> tensors;             // sorted by name
  std::vector<std::vector<int32_t>> row_sums;  // of the int8 tensors
  detail::ModelWeights weights;
  std::unique_ptr<const detail::Tokenizer> tokenizer;         // over the file's vocabulary arrays
  std::unique_ptr<const detail::Tokenizer> target_tokenizer;  // null: `tokenizer` decodes too
  // vocabulary(), target_vocabulary(): owning copies, made on first use
  // (tools; translation never needs them).
  mutable std::once_flag vocabulary_once, target_vocabulary_once;
  // content_fingerprint(): the file's hash, made on first use (a cache's).
  mutable std::once_flag fingerprint_once;
  mutable uint64_t fingerprint = 0;
  mutable std::optional<VocabularyData> vocabulary, target_vocabulary;
  // Device copies of the weights, made by the first CUDA session on each GPU.
  mutable detail::CudaWeightCache cuda_weights;
  std::optional<ShortlistView> shortlist;  // in the mapping
  // translate_paragraphs' default non-breaking prefixes (text/model_prefixes.hpp).
  NonBreakingPrefixes sentence_prefixes;
  Status sentence_prefixes_status;
};

namespace {

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
    case fb::Activation::relu:
      m.activation = Activation::relu;
      break;
    case fb::Activation::gelu:
      m.activation = Activation::gelu;
      break;
    case fb::Activation::swish:
      m.activation = Activation::swish;
      break;
    default:
      return Status::error(Errc::invalid_model, "config field 'activation' has unknown value %d", int(c.activation()));
  }
  switch (c.norm_position()) {
    case fb::NormPosition::post:
      m.pre_norm = false;
      break;
    case fb::NormPosition::pre:
      m.pre_norm = true;
      break;
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
  m.embedding_scale = c.embedding_scale();
  m.decoder_start_id = c.decoder_start_id();
  m.source_eos = c.source_eos();
  m.stored_positions = c.stored_positions();
  if (c.suppressed_ids()) m.suppressed_ids.assign(c.suppressed_ids()->begin(), c.suppressed_ids()->end());
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
    return Status::error(Errc::invalid_model, "tensor '%.*s' has rank %u (expected 1 or 2)", nl, n, shape->size());
  }
  uint64_t count = 1;
  for (uint32_t d : *shape) {
    if (d == 0) return Status::error(Errc::invalid_model, "tensor '%.*s' has a zero dimension", nl, n);
    count *= d;  // rank <= 2 and dims < 2^32: no overflow
  }
  const bool i8 = t.dtype() == fb::DType::i8;
  if (t.dtype() != fb::DType::f32 && !i8) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' has unknown dtype %d", nl, n, int(t.dtype()));
  }
  uint64_t expected_bytes = count * (i8 ? 1 : sizeof(float));
  if (i8 != (t.layout() == fb::Layout::packed_k4n16)) {
    return Status::error(Errc::invalid_model, "tensor '%.*s': int8 tensors and only they use layout packed_k4n16", nl,
                         n);
  }
  if (t.layout() == fb::Layout::packed_n16 || t.layout() == fb::Layout::packed_k4n16) {
    if (shape->size() != 2) {
      return Status::error(Errc::invalid_model, "tensor '%.*s' is packed but not 2-D", nl, n);
    }
    // Packing rounds dimensions up (to 16 rows, to 4 in k) in int: far below INT_MAX.
    constexpr uint32_t kMaxPackedDim = 1u << 30;
    if (shape->Get(0) > kMaxPackedDim || shape->Get(1) > kMaxPackedDim) {
      return Status::error(Errc::invalid_model, "tensor '%.*s' has a dimension above 2^30", nl, n);
    }
    const int N = int(shape->Get(0)), K = int(shape->Get(1));
    expected_bytes = i8 ? packed_size_i8(N, K) : packed_size(N, K) * sizeof(float);
  } else if (t.layout() != fb::Layout::row_major) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' has unknown layout %d", nl, n, int(t.layout()));
  }
  const auto* data = t.data();
  if (data->size() != expected_bytes) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' holds %u bytes, its shape needs %llu", nl, n, data->size(),
                         static_cast<unsigned long long>(expected_bytes));
  }
  const size_t offset = size_t(data->data() - file_base);
  if (offset % detail::kAlignment != 0) {
    return Status::error(Errc::invalid_model, "tensor '%.*s' data is not 64-byte aligned", nl, n);
  }
  const auto* scales = t.scales();
  if (!i8) {
    if (scales != nullptr && scales->size() != 0) {
      return Status::error(Errc::invalid_model, "tensor '%.*s' is fp32 but has scales", nl, n);
    }
  } else {
    const uint32_t rows = shape->Get(0);
    if (scales == nullptr || scales->size() != rows) {
      return Status::error(Errc::invalid_model, "int8 tensor '%.*s' needs %u scales", nl, n, rows);
    }
    // Scales sit with the tables, not in the weight pages: cheap to check here.
    for (uint32_t r = 0; r < rows; ++r) {
      const float v = scales->Get(r);
      if (!std::isfinite(v) || v <= 0.0f) {
        return Status::error(Errc::invalid_model,
                             "int8 tensor '%.*s' row %u has scale %g (must be finite and positive)", nl, n, r,
                             double(v));
      }
    }
    view->scales = {scales->data(), scales->size()};
  }
  view->name = name;
  view->shape = {shape->data(), shape->size()};
  view->dtype = i8 ? DType::i8 : DType::f32;
  view->layout = static_cast<Layout>(t.layout());
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
    const bool same_shape = std::equal(spec.shape.begin(), spec.shape.end(), t->shape.begin(), t->shape.end());
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
      return Status::error(Errc::invalid_model, "tensor '%s' has shape %s, the config needs %s", spec.name.c_str(), got,
                           want);
    }
    const bool quantizable = spec.role == TensorRole::weight || spec.role == TensorRole::embedding;
    const bool int8_ok = quantizable && t->layout == Layout::packed_k4n16;
    if (t->layout != spec.layout && !int8_ok) {
      auto name = [](Layout l) {
        return l == Layout::packed_n16 ? "packed_n16" : l == Layout::packed_k4n16 ? "packed_k4n16" : "row_major";
      };
      return Status::error(Errc::invalid_model, "tensor '%s' has layout %s, expected %s%s", spec.name.c_str(),
                           name(t->layout), name(spec.layout), quantizable ? " or packed_k4n16 (int8)" : "");
    }
  }
  if (tensors.size() != specs.size()) {
    for (const TensorView& t : tensors) {
      const bool known = std::any_of(specs.begin(), specs.end(), [&](const TensorSpec& s) { return s.name == t.name; });
      if (!known) {
        return Status::error(Errc::invalid_model, "unexpected tensor '%.*s' for this config", int(t.name.size()),
                             t.name.data());
      }
    }
  }
  return {};
}

Status check_finite(const std::vector<TensorView>& tensors) {
  for (const TensorView& t : tensors) {
    if (t.dtype != DType::f32) continue;  // int8 has no NaN
    const float* v = t.f32();
    const size_t n = t.data.size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(v[i])) {
        return Status::error(Errc::invalid_model, "tensor '%.*s' holds a %s at element %zu", int(t.name.size()),
                             t.name.data(), std::isnan(v[i]) ? "NaN" : "Inf", i);
      }
    }
  }
  return {};
}

// The row sums of every int8 tensor, kept by the model (see Model): the
// zero-point compensation of per-row dynamic activations.
void sum_int8_rows(std::vector<TensorView>& tensors, std::vector<std::vector<int32_t>>& storage) {
  for (TensorView& t : tensors) {
    if (t.dtype != DType::i8) continue;
    const int N = int(t.shape[0]), K = int(t.shape[1]), Kp = padded_k_i8(K);
    std::vector<int32_t>& sums = storage.emplace_back(size_t(N), 0);
    // Panel by panel in storage order: each 64-byte row holds 4 k of 16 rows.
    const int8_t* w = t.i8();
    for (int p = 0; p < int(packed_panels(N)); ++p) {
      const int8_t* panel = w + size_t(p) * size_t(Kp) * kPanelWidth;
      for (int g = 0; g < Kp / 4; ++g) {
        for (int j = 0; j < kPanelWidth && p * kPanelWidth + j < N; ++j) {
          const int8_t* q = panel + size_t(g) * 64 + size_t(j) * 4;
          sums[size_t(p * kPanelWidth + j)] += q[0] + q[1] + q[2] + q[3];
        }
      }
    }
    t.row_sums = sums;
  }
}

// The calibrated input quantization of `layer`, or null.
const LayerInputScale* find_input(const ModelQuantization& q, std::string_view layer) {
  auto it = std::lower_bound(q.inputs.begin(), q.inputs.end(), layer,
                             [](const LayerInputScale& s, std::string_view key) { return s.layer < key; });
  return it != q.inputs.end() && it->layer == layer ? &*it : nullptr;
}

Expected<detail::ModelWeights> resolve_weights(const ModelConfig& cfg, const std::vector<TensorView>& tensors,
                                               const ModelQuantization& quantization) {
  detail::ModelWeights w;
  Status status;
  auto f32 = [&](const std::string& name) { return find_in(tensors, name)->f32(); };
  auto embedding = [&](const std::string& name) {
    const TensorView* t = find_in(tensors, name);
    if (t->dtype == DType::i8) return detail::Embedding{nullptr, t->i8(), t->scales.data()};
    return detail::Embedding{t->f32(), nullptr, nullptr};
  };
  // A linear layer from its weight (fp32 or int8) and fp32 bias.
  auto linear = [&](const std::string& scope, const TensorView* weight, int n, int k) {
    detail::Linear l;
    l.bias = f32(scope + "/bias");
    l.n = n, l.k = k;
    l.index = int(w.linear_names.size());
    w.linear_names.push_back(scope);
    if (weight->dtype != DType::i8) {
      l.weight = weight->f32();
      return l;
    }
    l.weight_i8 = weight->i8();
    l.scales = weight->scales.data();
    l.row_sums = weight->row_sums.data();
    w.any_int8 = true;
    w.max_int8_k = std::max(w.max_int8_k, k);
    if (quantization.activations == ActivationScales::calibrated) {
      const LayerInputScale* in = find_input(quantization, scope);
      if (in == nullptr && status.ok()) {
        status = Status::error(Errc::invalid_model, "int8 layer '%s' has no calibrated input scale", scope.c_str());
      } else if (in != nullptr) {
        l.input_scale = in->scale;
        l.input_zero = in->zero_point;
      }
    }
    return l;
  };
  auto layer = [&](const std::string& scope, int n, int k) {
    return linear(scope, find_in(tensors, scope + "/weight"), n, k);
  };
  auto norm = [&](const std::string& scope) { return detail::Norm{f32(scope + "/gamma"), f32(scope + "/beta")}; };
  const int C = cfg.d_model, F = cfg.d_ff;
  w.target_embedding = embedding("target_embedding");
  w.source_embedding = cfg.shared_embeddings ? w.target_embedding : embedding("source_embedding");
  for (int i = 0; i < cfg.encoder_layers; ++i) {
    const std::string l = "encoder/layer_" + std::to_string(i);
    w.encoder.push_back({layer(l + "/self_attention/qkv", 3 * C, C), layer(l + "/self_attention/out", C, C),
                         layer(l + "/ffn/linear_0", F, C), layer(l + "/ffn/linear_1", C, F),
                         norm(l + "/self_attention/norm"), norm(l + "/ffn/norm")});
  }
  for (int i = 0; i < cfg.decoder_layers; ++i) {
    const std::string l = "decoder/layer_" + std::to_string(i);
    w.decoder.push_back({layer(l + "/self_attention/qkv", 3 * C, C), layer(l + "/self_attention/out", C, C),
                         layer(l + "/cross_attention/q", C, C), layer(l + "/cross_attention/kv", 2 * C, C),
                         layer(l + "/cross_attention/out", C, C), layer(l + "/ffn/linear_0", F, C),
                         layer(l + "/ffn/linear_1", C, F), norm(l + "/self_attention/norm"),
                         norm(l + "/cross_attention/norm"), norm(l + "/ffn/norm")});
  }
  // The output projection: its own weight, or the target embedding when tied.
  const TensorView* out = find_in(tensors, cfg.tied_output ? "target_embedding" : "output/weight");
  w.output = linear("output", out, cfg.target_vocab_size, C);
  if (cfg.pre_norm) {
    w.encoder_norm = norm("encoder/norm");
    w.decoder_norm = norm("decoder/norm");
  }
  if (cfg.stored_positions) w.position_table = find_in(tensors, "position_encoding")->f32();
  if (!w.any_int8 && !quantization.inputs.empty()) {
    return Status::error(Errc::invalid_model, "model has calibrated input scales but no int8 layer");
  }
  MT_RETURN_IF_ERROR(status);
  return w;
}

// The quantization table: checked here (names, ranges), applied by resolve_weights.
Expected<ModelQuantization> read_quantization(const fb::Quantization* q, const std::vector<TensorView>& tensors) {
  ModelQuantization out;
  out.int8 = std::any_of(tensors.begin(), tensors.end(), [](const TensorView& t) { return t.dtype == DType::i8; });
  if (q == nullptr) return out;
  switch (q->activations()) {
    case fb::ActivationScales::dynamic_per_row:
      out.activations = ActivationScales::dynamic_per_row;
      break;
    case fb::ActivationScales::calibrated:
      out.activations = ActivationScales::calibrated;
      break;
    default:
      return Status::error(Errc::invalid_model, "quantization field 'activations' has unknown value %d",
                           int(q->activations()));
  }
  out.method = str(q->method());
  if (q->inputs()) {
    for (const fb::LayerInput* in : *q->inputs()) {
      LayerInputScale s{in->layer()->str(), in->scale(), in->zero_point()};
      if (!std::isfinite(s.scale) || s.scale <= 0.0f || s.zero_point < 0 || s.zero_point > 255) {
        return Status::error(Errc::invalid_model,
                             "layer '%s' has input scale %g and zero point %d (need a finite scale > 0 and 0..255)",
                             s.layer.c_str(), double(s.scale), s.zero_point);
      }
      if (!out.inputs.empty() && !(out.inputs.back().layer < s.layer)) {
        return Status::error(Errc::invalid_model, "input scale of layer '%s' is duplicated or out of order",
                             s.layer.c_str());
      }
      out.inputs.push_back(std::move(s));
    }
  }
  return out;
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

// Version 1 keeps one table per piece: copied into a VocabularyData.
VocabularyData read_vocabulary_v1(const fb::Vocabulary& v) {
  VocabularyData out;
  out.pieces.reserve(v.pieces()->size());
  for (const fb::Piece* p : *v.pieces()) {
    out.pieces.push_back({p->text()->str(), p->score(), static_cast<PieceType>(p->type())});
  }
  return out;
}

// Version 2 keeps flat arrays, viewed in place; the flags and strings are
// filled in for both versions.
detail::VocabularyView view_vocabulary(const fb::Vocabulary& v) {
  detail::VocabularyView out;
  const auto span_of = [](const auto* vector) {
    using T = std::remove_cvref_t<decltype(*vector->data())>;
    return vector ? std::span<const T>(vector->data(), vector->size()) : std::span<const T>();
  };
  out.type = static_cast<VocabularyType>(v.type());
  if (v.piece_text()) out.piece_text = {reinterpret_cast<const char*>(v.piece_text()->data()), v.piece_text()->size()};
  out.piece_ends = span_of(v.piece_ends());
  out.piece_scores = span_of(v.piece_scores());
  out.piece_types = span_of(v.piece_types());
  out.precompiled_charsmap = span_of(v.precompiled_charsmap());
  if (v.normalization_name()) out.normalization_name = v.normalization_name()->string_view();
  if (v.unk_surface()) out.unk_surface = v.unk_surface()->string_view();
  out.add_dummy_prefix = v.add_dummy_prefix();
  out.remove_extra_whitespaces = v.remove_extra_whitespaces();
  out.escape_whitespaces = v.escape_whitespaces();
  out.byte_fallback = v.byte_fallback();
  out.language_codes = v.language_codes();
  out.treat_whitespace_as_suffix = v.treat_whitespace_as_suffix();
  out.normalized_expansion = v.normalized_expansion();
  out.model_ids = span_of(v.model_ids());
  if (v.unknown_text())
    out.unknown_text = {reinterpret_cast<const char*>(v.unknown_text()->data()), v.unknown_text()->size()};
  out.unknown_ends = span_of(v.unknown_ends());
  out.unknown_model_ids = span_of(v.unknown_ids());
  return out;
}

Expected<std::unique_ptr<const detail::Tokenizer>> read_tokenizer(const fb::Vocabulary& v) {
  const detail::VocabularyView view = view_vocabulary(v);
  if (v.pieces()) {
    // Version 1: the pieces are a table of their own. The flat piece arrays
    // are not read (nor checked) then: a damaged file may hold garbage there.
    VocabularyData data = view.settings();
    data.pieces = read_vocabulary_v1(v).pieces;
    return detail::Tokenizer::create(std::move(data));
  }
  const int parts =
      (v.trie_edge_counts() != nullptr) + (v.trie_labels() != nullptr) + (v.trie_piece_nodes() != nullptr);
  if (parts == 0) return detail::Tokenizer::create(view, nullptr);  // built at load
  if (parts != 3) return Status::error(Errc::corrupt_model, "vocabulary has %d of the 3 piece trie arrays", parts);
  // Little-endian, as the tensors read in place are.
  const detail::PieceTrie::Stored trie{{v.trie_edge_counts()->data(), v.trie_edge_counts()->size()},
                                       {v.trie_labels()->data(), v.trie_labels()->size()},
                                       {v.trie_piece_nodes()->data(), v.trie_piece_nodes()->size()}};
  return detail::Tokenizer::create(view, &trie);
}

// Special pieces where the config says, in the vocabulary whose piece index is the model id.
Status check_special_pieces(const ModelConfig& config, const detail::VocabularyView& v) {
  const struct {
    const char* name;
    int id;
    PieceType type;
  } specials[] = {{"unk_id", config.unk_id, PieceType::unknown},
                  {"bos_id", config.bos_id, PieceType::control},
                  {"eos_id", config.eos_id, PieceType::control}};
  for (const auto& s : specials) {
    if (v.piece_type(size_t(s.id)) != s.type) {
      return Status::error(
          Errc::invalid_model, "config field '%s' = %d names vocabulary piece '%s', which is not a %s piece", s.name,
          s.id, std::string(v.piece(size_t(s.id))).c_str(), s.type == PieceType::unknown ? "unknown" : "control");
    }
  }
  return {};
}

// The source vocabulary encodes, into its model ids or its piece indices;
// the target vocabulary (when the file has one, else the same) decodes, its
// piece index being the target id. One joint vocabulary serves both sides
// when it has no model ids and its size is both of the config's.
Status check_vocabularies(const ModelConfig& config, const detail::VocabularyView& source,
                          const detail::VocabularyView* target) {
  const int size = int(source.size());
  if (target == nullptr) {
    if (!source.model_ids.empty())
      return Status::error(Errc::invalid_model,
                           "vocabulary has model ids but the file has no target vocabulary to decode with");
    if (size != config.source_vocab_size || size != config.target_vocab_size) {
      return Status::error(Errc::invalid_model,
                           "vocabulary has %d pieces but the config's vocabulary sizes are %d (source) and %d (target)",
                           size, config.source_vocab_size, config.target_vocab_size);
    }
    return check_special_pieces(config, source);
  }
  if (!target->model_ids.empty())
    return Status::error(Errc::invalid_model, "the target vocabulary has model ids (its piece index must be the id)");
  if (int(target->size()) != config.target_vocab_size) {
    return Status::error(Errc::invalid_model,
                         "target vocabulary has %zu pieces but the config's target_vocab_size is %d", target->size(),
                         config.target_vocab_size);
  }
  MT_RETURN_IF_ERROR(check_special_pieces(config, *target));
  if (source.model_ids.empty()) {
    if (size != config.source_vocab_size)
      return Status::error(Errc::invalid_model, "vocabulary has %d pieces but the config's source_vocab_size is %d",
                           size, config.source_vocab_size);
    if (source.piece_type(size_t(config.unk_id)) != PieceType::unknown)
      return Status::error(Errc::invalid_model, "config field 'unk_id' = %d is not the vocabulary's unknown piece",
                           config.unk_id);
    return {};
  }
  for (size_t i = 0; i < source.size(); ++i) {
    const int32_t id = source.model_ids[i];
    if (id >= config.source_vocab_size)
      return Status::error(Errc::invalid_model,
                           "vocabulary piece %zu has model id %d, outside the source vocabulary of %d", i, id,
                           config.source_vocab_size);
    if (source.piece_type(i) == PieceType::unknown && id != config.unk_id)
      return Status::error(Errc::invalid_model, "the vocabulary's unknown piece has model id %d, not unk_id %d", id,
                           config.unk_id);
  }
  for (size_t i = 0; i < source.unknown_model_ids.size(); ++i) {
    if (source.unknown_model_ids[i] >= config.source_vocab_size)
      return Status::error(Errc::invalid_model,
                           "vocabulary unknown text %zu has model id %d, outside the source vocabulary of %d", i,
                           source.unknown_model_ids[i], config.source_vocab_size);
  }
  return {};
}

Status parse(Model::Impl& impl, const LoadOptions& options) {
  const std::span<const uint8_t> bytes = impl.bytes;
  if (bytes.size() < 8) {
    return Status::error(Errc::corrupt_model, "model file is %zu bytes, too short to be a libmt model", bytes.size());
  }
  if (!fb::ModelBufferHasIdentifier(bytes.data())) {
    char id[5] = {};
    for (int i = 0; i < 4; ++i) id[i] = std::isprint(bytes[4 + i]) ? char(bytes[4 + i]) : '?';
    return Status::error(Errc::corrupt_model, "not a libmt model file: identifier '%s', expected '%s'", id,
                         fb::ModelIdentifier());
  }
  if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Status::error(Errc::corrupt_model, "model file of %zu bytes exceeds the 2 GiB format limit", bytes.size());
  }
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!fb::VerifyModelBuffer(verifier)) {
    return Status::error(Errc::corrupt_model,
                         "model file failed structural verification (truncated or corrupt, %zu bytes)", bytes.size());
  }
  const fb::Model* model = fb::GetModel(bytes.data());
  impl.format_version = model->format_version();
  if (impl.format_version == 0 || impl.format_version > kModelFormatVersion) {
    return Status::error(Errc::unsupported_version,
                         "model format version %u is not supported (this libmt reads 1 to %u)", impl.format_version,
                         kModelFormatVersion);
  }
  auto config = read_config(*model->config());
  if (!config) return config.status();
  impl.config = config.value();
  const char* feature = detail::version_3_feature(impl.config);
  if (feature == nullptr && model->target_vocabulary() != nullptr) feature = "target_vocabulary";
  if (feature == nullptr && model->vocabulary() != nullptr && model->vocabulary()->model_ids() != nullptr)
    feature = "vocabulary model_ids";
  if (feature == nullptr && model->vocabulary() != nullptr && model->vocabulary()->language_codes())
    feature = "vocabulary language_codes";
  if (feature != nullptr && impl.format_version < 3) {
    return Status::error(Errc::invalid_model, "config field %s needs format version 3; the file says %u", feature,
                         impl.format_version);
  }

  impl.tensors.resize(model->tensors()->size());
  for (uint32_t i = 0; i < model->tensors()->size(); ++i) {
    MT_RETURN_IF_ERROR(check_tensor(*model->tensors()->Get(i), bytes.data(), &impl.tensors[i]));
    if (i > 0 && !(impl.tensors[i - 1].name < impl.tensors[i].name)) {
      const auto& name = impl.tensors[i].name;
      return Status::error(Errc::invalid_model, "tensor '%.*s' is duplicated or out of order", int(name.size()),
                           name.data());
    }
  }
  MT_RETURN_IF_ERROR(check_against_spec(impl.config, impl.tensors));
  if (options.check_weights_finite) MT_RETURN_IF_ERROR(check_finite(impl.tensors));
  impl.row_sums.reserve(impl.tensors.size());  // spans into it stay valid
  if (model->quantization() == nullptr ||
      model->quantization()->activations() == fb::ActivationScales::dynamic_per_row) {
    sum_int8_rows(impl.tensors, impl.row_sums);  // calibrated models fold them into the biases
  }
  auto quantization = read_quantization(model->quantization(), impl.tensors);
  if (!quantization) return quantization.status();
  impl.quantization = std::move(quantization.value());
  auto weights = resolve_weights(impl.config, impl.tensors, impl.quantization);
  if (!weights) return weights.status();
  impl.weights = std::move(weights.value());
  impl.metadata = read_metadata(model->metadata());
  auto shortlist = detail::read_shortlist(model->shortlist(), impl.config);
  if (!shortlist) return shortlist.status();
  impl.shortlist = shortlist.value();
  if (auto prefixes = detail::nonbreaking_prefixes_for(impl.metadata)) {
    impl.sentence_prefixes = std::move(prefixes.value());
  } else {
    impl.sentence_prefixes_status = prefixes.status();  // an error for sessions, not for loading
  }
  if (options.load_vocabulary && model->vocabulary() != nullptr &&
      model->vocabulary()->type() != fb::VocabularyType::none) {
    auto tokenizer = read_tokenizer(*model->vocabulary());  // validates it
    if (!tokenizer) return tokenizer.status();
    const fb::Vocabulary* target = model->target_vocabulary();
    if (target != nullptr) {
      auto target_tokenizer = read_tokenizer(*target);
      if (!target_tokenizer) {
        return Status::error(target_tokenizer.status().code(), "target %s", target_tokenizer.status().message());
      }
      impl.target_tokenizer = std::move(target_tokenizer.value());
    }
    MT_RETURN_IF_ERROR(check_vocabularies(impl.config, (*tokenizer)->vocabulary(),
                                          target ? &impl.target_tokenizer->vocabulary() : nullptr));
    impl.tokenizer = std::move(tokenizer.value());
  }
  return {};
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

Expected<std::shared_ptr<const Model>> Model::load(const std::string& path, const LoadOptions& options) {
  auto file = detail::MappedFile::open(path, options.read_into_memory);
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

Expected<std::shared_ptr<const Model>> Model::from_buffer(std::span<const uint8_t> bytes, const LoadOptions& options) {
  if (reinterpret_cast<uintptr_t>(bytes.data()) % detail::kAlignment != 0) {
    return Status::error(Errc::invalid_argument, "model buffer must be 64-byte aligned");
  }
  auto impl = std::make_unique<Impl>();
  impl->bytes = bytes;
  MT_RETURN_IF_ERROR(parse(*impl, options));
  return std::shared_ptr<const Model>(new Model(std::move(impl)));
}

const ModelConfig& Model::config() const { return impl_->config; }
const ModelMetadata& Model::metadata() const { return impl_->metadata; }
const ModelQuantization& Model::quantization() const { return impl_->quantization; }
uint32_t Model::format_version() const { return impl_->format_version; }
size_t Model::file_size() const { return impl_->bytes.size(); }
std::span<const TensorView> Model::tensors() const { return impl_->tensors; }
const TensorView* Model::find_tensor(std::string_view name) const { return find_in(impl_->tensors, name); }
std::span<const uint8_t> Model::bytes() const { return impl_->bytes; }
Status Model::save(const std::string& path) const { return detail::write_file_atomically(path, impl_->bytes); }
const detail::ModelWeights& Model::weights() const { return impl_->weights; }
detail::CudaWeightCache& Model::cuda_weights() const { return impl_->cuda_weights; }
uint64_t Model::content_fingerprint() const {
  std::call_once(impl_->fingerprint_once, [&] { impl_->fingerprint = detail::content_hash(impl_->bytes); });
  return impl_->fingerprint;
}
const ShortlistView* Model::shortlist() const { return impl_->shortlist ? &*impl_->shortlist : nullptr; }
const VocabularyData* Model::vocabulary() const {
  if (!impl_->tokenizer) return nullptr;
  std::call_once(impl_->vocabulary_once, [&] { impl_->vocabulary = impl_->tokenizer->vocabulary().to_data(); });
  return &*impl_->vocabulary;
}
const VocabularyData* Model::target_vocabulary() const {
  if (!impl_->target_tokenizer) return nullptr;
  std::call_once(impl_->target_vocabulary_once,
                 [&] { impl_->target_vocabulary = impl_->target_tokenizer->vocabulary().to_data(); });
  return &*impl_->target_vocabulary;
}
const detail::Tokenizer* Model::tokenizer() const { return impl_->tokenizer.get(); }
const NonBreakingPrefixes& Model::sentence_prefixes() const { return impl_->sentence_prefixes; }
const Status& Model::sentence_prefixes_status() const { return impl_->sentence_prefixes_status; }
bool Model::has_vocabulary() const { return impl_->tokenizer != nullptr; }
const detail::Tokenizer* Model::target_tokenizer() const {
  return impl_->target_tokenizer ? impl_->target_tokenizer.get() : impl_->tokenizer.get();
}

}  // namespace mt
