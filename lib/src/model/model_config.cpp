#include "mt/model.hpp"

#include "model/format_version.hpp"
#include "mt/model_spec.hpp"

namespace mt {

Expected<ModelConfig> ModelConfig::preset(std::string_view name) {
  ModelConfig c;
  c.shared_embeddings = true;
  c.tied_output = true;
  if (name == "base") {
    // Vaswani et al. 2017, Table 3 "base".
    c.encoder_layers = 6, c.decoder_layers = 6, c.d_model = 512, c.heads = 8, c.d_ff = 2048;
    c.source_vocab_size = c.target_vocab_size = 32000;
  } else if (name == "small") {
    c.encoder_layers = 6, c.decoder_layers = 2, c.d_model = 256, c.heads = 4, c.d_ff = 1024;
    c.source_vocab_size = c.target_vocab_size = 8000;
  } else if (name == "tiny") {
    c.encoder_layers = 4, c.decoder_layers = 4, c.d_model = 128, c.heads = 4, c.d_ff = 256;
    c.source_vocab_size = c.target_vocab_size = 8000;
  } else {
    return Status::error(Errc::invalid_argument, "unknown model preset '%.*s' (known: base, small, tiny)",
                         int(name.size()), name.data());
  }
  return c;
}

Status ModelConfig::validate() const {
  auto bad = [](const char* field, long value, const char* why) {
    return Status::error(Errc::invalid_model, "config field '%s' = %ld: %s", field, value, why);
  };
  // Bounds keep every size computation far from integer overflow.
  constexpr int kMaxDim = 1 << 16, kMaxVocab = 1 << 22, kMaxLayers = 256;
  if (encoder_layers < 1 || encoder_layers > kMaxLayers)
    return bad("encoder_layers", encoder_layers, "must be in [1, 256]");
  if (decoder_layers < 1 || decoder_layers > kMaxLayers)
    return bad("decoder_layers", decoder_layers, "must be in [1, 256]");
  if (d_model < 1 || d_model > kMaxDim) return bad("d_model", d_model, "must be in [1, 65536]");
  if (heads < 1 || heads > d_model) return bad("heads", heads, "must be in [1, d_model]");
  if (d_model % heads != 0) return bad("heads", heads, "must divide d_model");
  if (d_ff < 1 || d_ff > 4 * kMaxDim) return bad("d_ff", d_ff, "must be in [1, 262144]");
  if (source_vocab_size < 4 || source_vocab_size > kMaxVocab)
    return bad("source_vocab_size", source_vocab_size, "must be in [4, 4194304]");
  if (target_vocab_size < 4 || target_vocab_size > kMaxVocab)
    return bad("target_vocab_size", target_vocab_size, "must be in [4, 4194304]");
  if (max_positions < 2 || max_positions > kMaxDim) return bad("max_positions", max_positions, "must be in [2, 65536]");
  if (activation != Activation::relu && activation != Activation::gelu && activation != Activation::swish)
    return bad("activation", long(activation), "must be relu, gelu or swish");
  if (!(layer_norm_epsilon > 0.0f && layer_norm_epsilon < 1.0f))
    return Status::error(Errc::invalid_model, "config field 'layer_norm_epsilon' = %g: must be in (0, 1)",
                         double(layer_norm_epsilon));
  if (shared_embeddings && source_vocab_size != target_vocab_size)
    return bad("shared_embeddings", 1, "needs source_vocab_size == target_vocab_size");
  const struct {
    const char* name;
    int id;
  } ids[] = {{"pad_id", pad_id}, {"bos_id", bos_id}, {"eos_id", eos_id}, {"unk_id", unk_id}};
  for (const auto& id : ids) {
    if (id.id < 0 || id.id >= target_vocab_size || id.id >= source_vocab_size)
      return bad(id.name, id.id, "must be a valid token id of both vocabularies");
  }
  if (bos_id == eos_id) return bad("eos_id", eos_id, "must differ from bos_id");
  if (!(embedding_scale >= 0.0f && embedding_scale <= 1e4f))
    return Status::error(Errc::invalid_model,
                         "config field 'embedding_scale' = %g: must be in [0, 10000] (0: sqrt(d_model))",
                         double(embedding_scale));
  if (decoder_start_id < -1 || decoder_start_id >= target_vocab_size)
    return bad("decoder_start_id", decoder_start_id, "must be -1 (bos_id) or a valid target token id");
  for (size_t i = 0; i < suppressed_ids.size(); ++i) {
    const int32_t id = suppressed_ids[i];
    if (id < 0 || id >= target_vocab_size) return bad("suppressed_ids", id, "must hold valid target token ids");
    if (id == eos_id) return bad("suppressed_ids", id, "must not hold eos_id (no sentence could end)");
    if (i > 0 && id <= suppressed_ids[i - 1]) return bad("suppressed_ids", id, "must be sorted and unique");
  }
  if (suppressed_ids.size() + 1 >= size_t(target_vocab_size))
    return bad("suppressed_ids", long(suppressed_ids.size()), "must leave more than eos_id to emit");
  return {};
}

Status ModelConfig::use_vocabulary(const VocabularyData& v) {
  int unk = -1, bos = -1, eos = -1, pad = -1;
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    const VocabularyPiece& p = v.pieces[i];
    if (p.type == PieceType::unknown) unk = int(i);
    if (p.type == PieceType::control && p.text == "<s>") bos = int(i);
    if (p.type == PieceType::control && p.text == "</s>") eos = int(i);
    if (p.type == PieceType::control && p.text == "<pad>") pad = int(i);
  }
  if (unk < 0 || bos < 0 || eos < 0) {
    return Status::error(Errc::invalid_argument, "vocabulary needs an unknown piece, <s> and </s>");
  }
  source_vocab_size = target_vocab_size = int(v.pieces.size());
  unk_id = unk, bos_id = bos, eos_id = eos;
  pad_id = pad >= 0 ? pad : eos;
  return {};
}

int64_t ModelConfig::parameter_count() const {
  int64_t n = 0;
  for (const TensorSpec& spec : model_tensor_specs(*this)) n += int64_t(spec.element_count());
  return n;
}

namespace detail {

const char* version_3_feature(const ModelConfig& c) {
  if (c.activation == Activation::swish) return "activation swish";
  if (c.embedding_scale != 0.0f) return "embedding_scale";
  if (c.decoder_start_id != -1) return "decoder_start_id";
  if (!c.source_eos) return "source_eos";
  if (c.stored_positions) return "stored_positions";
  if (!c.suppressed_ids.empty()) return "suppressed_ids";
  return nullptr;
}

}  // namespace detail

}  // namespace mt
