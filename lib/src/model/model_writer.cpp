#include "mt/model_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "support/alignment.hpp"
#include "support/atomic_file.hpp"
#include "model/format_version.hpp"
#include "model/model_shortlist.hpp"
#include "model_generated.h"
#include "mt/kernels.h"
#include "mt/model_spec.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/vocabulary_view.hpp"

namespace mt {

namespace {

flatbuffers::Offset<fb::Config> build_config(flatbuffers::FlatBufferBuilder& b, const ModelConfig& c) {
  const auto suppressed = c.suppressed_ids.empty() ? 0 : b.CreateVector(c.suppressed_ids);
  fb::ConfigBuilder cb(b);
  cb.add_encoder_layers(uint32_t(c.encoder_layers));
  cb.add_decoder_layers(uint32_t(c.decoder_layers));
  cb.add_d_model(uint32_t(c.d_model));
  cb.add_heads(uint32_t(c.heads));
  cb.add_d_ff(uint32_t(c.d_ff));
  cb.add_source_vocab_size(uint32_t(c.source_vocab_size));
  cb.add_target_vocab_size(uint32_t(c.target_vocab_size));
  cb.add_max_positions(uint32_t(c.max_positions));
  cb.add_activation(c.activation == Activation::gelu    ? fb::Activation::gelu
                    : c.activation == Activation::swish ? fb::Activation::swish
                                                        : fb::Activation::relu);
  cb.add_norm_position(c.pre_norm ? fb::NormPosition::pre : fb::NormPosition::post);
  cb.add_layer_norm_epsilon(c.layer_norm_epsilon);
  cb.add_shared_embeddings(c.shared_embeddings);
  cb.add_tied_output(c.tied_output);
  cb.add_pad_id(c.pad_id);
  cb.add_bos_id(c.bos_id);
  cb.add_eos_id(c.eos_id);
  cb.add_unk_id(c.unk_id);
  cb.add_embedding_scale(c.embedding_scale);
  cb.add_decoder_start_id(c.decoder_start_id);
  cb.add_source_eos(c.source_eos);
  cb.add_stored_positions(c.stored_positions);
  if (!suppressed.IsNull()) cb.add_suppressed_ids(suppressed);
  return cb.Finish();
}

flatbuffers::Offset<fb::Metadata> build_metadata(flatbuffers::FlatBufferBuilder& b, const ModelMetadata& m) {
  std::vector<flatbuffers::Offset<fb::KeyValue>> extra;
  auto sorted = m.extra;
  std::sort(sorted.begin(), sorted.end(), [](const KeyValue& x, const KeyValue& y) { return x.key < y.key; });
  for (const KeyValue& kv : sorted) {
    extra.push_back(fb::CreateKeyValueDirect(b, kv.key.c_str(), kv.value.c_str()));
  }
  return fb::CreateMetadataDirect(b, m.source_language.c_str(), m.target_language.c_str(), m.training_corpus.c_str(),
                                  m.tool.c_str(), m.tool_version.c_str(), m.created.c_str(), &extra);
}

// Version 1 keeps one Piece table per piece; version 2 four flat arrays and
// the piece trie (`trie`, null for version 1).
flatbuffers::Offset<fb::Vocabulary> build_vocabulary(flatbuffers::FlatBufferBuilder& b, const VocabularyData& v,
                                                     uint32_t expansion, uint32_t format_version,
                                                     const detail::PieceTrie* trie) {
  std::vector<flatbuffers::Offset<fb::Piece>> pieces;
  std::vector<uint8_t> text, types;
  std::vector<uint32_t> ends;
  std::vector<float> scores;
  if (format_version == 1) {
    pieces.reserve(v.pieces.size());
    for (const VocabularyPiece& p : v.pieces) {
      pieces.push_back(fb::CreatePieceDirect(b, p.text.c_str(), p.score, static_cast<fb::PieceType>(p.type)));
    }
  } else {
    for (const VocabularyPiece& p : v.pieces) {
      text.insert(text.end(), p.text.begin(), p.text.end());
      ends.push_back(uint32_t(text.size()));
      scores.push_back(p.score);
      types.push_back(uint8_t(p.type));
    }
  }
  std::vector<uint8_t> unknown_text;
  std::vector<uint32_t> unknown_ends;
  std::vector<int32_t> unknown_ids;
  for (const VocabularyData::UnknownText& u : v.unknown_ids) {
    unknown_text.insert(unknown_text.end(), u.text.begin(), u.text.end());
    unknown_ends.push_back(uint32_t(unknown_text.size()));
    unknown_ids.push_back(u.model_id);
  }
  std::vector<uint8_t> trie_edge_counts, trie_labels;
  std::vector<uint32_t> trie_piece_nodes;
  if (trie != nullptr) trie->store(v.pieces.size(), &trie_edge_counts, &trie_labels, &trie_piece_nodes);
  auto optional = [](auto& vec) { return vec.empty() ? nullptr : &vec; };
  return fb::CreateVocabularyDirect(
      b, static_cast<fb::VocabularyType>(v.type), optional(pieces), &v.precompiled_charsmap, v.add_dummy_prefix,
      v.remove_extra_whitespaces, v.escape_whitespaces, v.byte_fallback, v.normalization_name.c_str(),
      v.treat_whitespace_as_suffix, v.unk_surface.c_str(), expansion, optional(text), optional(ends), optional(scores),
      optional(types), optional(trie_edge_counts), optional(trie_labels), optional(trie_piece_nodes),
      v.model_ids.empty() ? nullptr : &v.model_ids, optional(unknown_text), optional(unknown_ends),
      optional(unknown_ids), v.language_codes);
}

// What the loader would refuse is not written; the trie that proves the
// pieces distinct is stored for the loader (version 2).
Expected<flatbuffers::Offset<fb::Vocabulary>> build_checked_vocabulary(flatbuffers::FlatBufferBuilder& b,
                                                                       const VocabularyData& v, uint32_t version) {
  const detail::FlatVocabulary flat(v);
  MT_RETURN_IF_ERROR(flat.view().validate());
  auto trie = detail::piece_trie_of(flat.view(), /*user_defined_only=*/false);
  if (!trie) return trie.status();
  // Walk the normalizer's trie once here, so loading need not.
  size_t expansion = v.normalized_expansion;
  if (expansion == 0 && !v.precompiled_charsmap.empty()) {
    MT_RETURN_IF_ERROR(detail::check_charsmap(v.precompiled_charsmap, &expansion));
  }
  return build_vocabulary(b, v, uint32_t(expansion), version, version >= 2 ? &*trie : nullptr);
}

flatbuffers::Offset<fb::Quantization> build_quantization(flatbuffers::FlatBufferBuilder& b,
                                                         const ModelQuantization& q) {
  std::vector<LayerInputScale> sorted = q.inputs;
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerInputScale& x, const LayerInputScale& y) { return x.layer < y.layer; });
  std::vector<flatbuffers::Offset<fb::LayerInput>> inputs;
  for (const LayerInputScale& in : sorted) {
    inputs.push_back(fb::CreateLayerInputDirect(b, in.layer.c_str(), in.scale, in.zero_point));
  }
  return fb::CreateQuantizationDirect(b, static_cast<fb::ActivationScales>(q.activations), q.method.c_str(), &inputs);
}

}  // namespace

ModelWriter::ModelWriter(const ModelConfig& config) : config_(config) {}

Status ModelWriter::check_new(const std::string& name, const std::vector<uint32_t>& shape, size_t values) const {
  if (name.empty()) return Status::error(Errc::invalid_argument, "tensor name is empty");
  if (shape.empty() || shape.size() > 2) {
    return Status::error(Errc::invalid_argument, "tensor '%s' must be 1-D or 2-D", name.c_str());
  }
  size_t count = 1;
  for (uint32_t d : shape) count *= d;
  if (count != values || count == 0) {
    return Status::error(Errc::invalid_argument, "tensor '%s' has %zu values, its shape holds %zu", name.c_str(),
                         values, count);
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return Status::error(Errc::invalid_argument, "tensor '%s' added twice", name.c_str());
  }
  return {};
}

Status ModelWriter::add_tensor(const std::string& name, const std::vector<uint32_t>& shape, Layout layout,
                               std::span<const float> values) {
  MT_RETURN_IF_ERROR(check_new(name, shape, values.size()));
  if (layout == Layout::packed_k4n16) {
    return Status::error(Errc::invalid_argument, "tensor '%s': packed_k4n16 holds int8 values (add_tensor_i8)",
                         name.c_str());
  }
  PendingTensor t{name, shape, layout, {}, {}};
  if (layout == Layout::packed_n16) {
    if (shape.size() != 2) {
      return Status::error(Errc::invalid_argument, "packed tensor '%s' must be 2-D", name.c_str());
    }
    const int N = int(shape[0]), K = int(shape[1]);
    std::vector<float> packed(packed_size(N, K));
    pack_weights_f32(values.data(), N, K, packed.data());
    t.bytes.resize(packed.size() * sizeof(float));
    std::memcpy(t.bytes.data(), packed.data(), t.bytes.size());
  } else {
    t.bytes.resize(values.size() * sizeof(float));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  }
  tensors_.push_back(std::move(t));
  return {};
}

Status ModelWriter::add_tensor_i8(const std::string& name, const std::vector<uint32_t>& shape,
                                  std::span<const int8_t> values, std::span<const float> scales) {
  MT_RETURN_IF_ERROR(check_new(name, shape, values.size()));
  if (shape.size() != 2) {
    return Status::error(Errc::invalid_argument, "int8 tensor '%s' must be 2-D", name.c_str());
  }
  const int N = int(shape[0]), K = int(shape[1]);
  if (scales.size() != size_t(N)) {
    return Status::error(Errc::invalid_argument, "int8 tensor '%s' has %zu scales for %d rows", name.c_str(),
                         scales.size(), N);
  }
  for (float s : scales) {
    if (!std::isfinite(s) || s <= 0.0f) {
      return Status::error(Errc::invalid_argument, "int8 tensor '%s' has a scale that is not finite and positive",
                           name.c_str());
    }
  }
  PendingTensor t{name, shape, Layout::packed_k4n16, {}, {scales.begin(), scales.end()}};
  t.bytes.resize(packed_size_i8(N, K));
  pack_weights_i8(values.data(), N, K, reinterpret_cast<int8_t*>(t.bytes.data()));
  tensors_.push_back(std::move(t));
  return {};
}

const char* ModelWriter::version_3_feature() const {
  if (const char* feature = detail::version_3_feature(config_)) return feature;
  if (!vocabulary_.model_ids.empty()) return "vocabulary model_ids";
  if (vocabulary_.language_codes) return "vocabulary language_codes";
  if (target_vocabulary_.type != VocabularyType::none) return "target vocabulary";
  return nullptr;
}

uint32_t ModelWriter::format_version() const {
  if (format_version_) return *format_version_;
  return version_3_feature() != nullptr ? 3 : 2;
}

Expected<std::vector<uint8_t>> ModelWriter::serialize() const {
  size_t total = 1 << 16;
  for (const PendingTensor& t : tensors_) total += t.bytes.size() + detail::kAlignment + 256;
  if (total >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return Status::error(Errc::invalid_argument, "model of %zu bytes exceeds the 2 GiB format limit", total);
  }
  std::vector<const PendingTensor*> order;
  for (const PendingTensor& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->name < b->name; });

  flatbuffers::FlatBufferBuilder b(total);
  // The builder writes back to front: data vectors first puts them at the end
  // of the file, so the tables a loader reads sit together in the first pages
  // and loading touches none of the weights' pages. Each data vector is forced
  // to 64-byte alignment within the buffer.
  std::vector<flatbuffers::Offset<flatbuffers::Vector<uint8_t>>> data;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    b.ForceVectorAlignment((*it)->bytes.size(), 1, detail::kAlignment);
    data.push_back(b.CreateVector((*it)->bytes));
  }
  std::reverse(data.begin(), data.end());
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  bool any_int8 = false;
  for (size_t i = 0; i < order.size(); ++i) {
    const PendingTensor* t = order[i];
    auto name = b.CreateString(t->name);
    auto shape = b.CreateVector(t->shape);
    const bool i8 = t->layout == Layout::packed_k4n16;
    auto scales = i8 ? b.CreateVector(t->scales) : 0;
    tensors.push_back(fb::CreateTensor(b, name, shape, i8 ? fb::DType::i8 : fb::DType::f32,
                                       static_cast<fb::Layout>(t->layout), scales, data[i]));
    any_int8 = any_int8 || i8;
  }
  auto tensor_vector = b.CreateVector(tensors);
  const uint32_t version = format_version();
  if (any_int8 && version < 2) {
    return Status::error(Errc::invalid_argument, "int8 tensors need format version 2 or later");
  }
  if (const char* feature = version_3_feature(); feature != nullptr && version < 3) {
    return Status::error(Errc::invalid_argument, "the %s needs format version 3 or later", feature);
  }

  auto metadata = build_metadata(b, metadata_);
  auto config = build_config(b, config_);
  flatbuffers::Offset<fb::Vocabulary> vocabulary, target_vocabulary;
  if (vocabulary_.type != VocabularyType::none) {
    auto built = build_checked_vocabulary(b, vocabulary_, version);
    if (!built) return built.status();
    vocabulary = built.value();
  }
  if (!vocabulary_.model_ids.empty() && target_vocabulary_.type == VocabularyType::none)
    return Status::error(Errc::invalid_argument,
                         "a vocabulary with model ids needs a target vocabulary to decode with");
  if (target_vocabulary_.type != VocabularyType::none) {
    if (vocabulary_.type == VocabularyType::none)
      return Status::error(Errc::invalid_argument, "a target vocabulary needs a (source) vocabulary");
    auto built = build_checked_vocabulary(b, target_vocabulary_, version);
    if (!built) return Status::error(built.status().code(), "target %s", built.status().message());
    target_vocabulary = built.value();
  }
  flatbuffers::Offset<fb::Quantization> quantization;
  if (any_int8) quantization = build_quantization(b, quantization_);
  flatbuffers::Offset<fb::Shortlist> shortlist;
  if (shortlist_) {
    MT_RETURN_IF_ERROR(detail::check_shortlist(*shortlist_, config_));
    shortlist = detail::build_shortlist(b, *shortlist_);
  }
  fb::ModelBuilder mb(b);
  mb.add_format_version(version);
  if (!quantization.IsNull()) mb.add_quantization(quantization);
  mb.add_config(config);
  mb.add_tensors(tensor_vector);
  mb.add_metadata(metadata);
  if (!vocabulary.IsNull()) mb.add_vocabulary(vocabulary);
  if (!target_vocabulary.IsNull()) mb.add_target_vocabulary(target_vocabulary);
  if (!shortlist.IsNull()) mb.add_shortlist(shortlist);
  fb::FinishModelBuffer(b, mb.Finish());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

Expected<ModelWriter> ModelWriter::from_model(const Model& m) {
  ModelWriter writer(m.config());
  writer.set_metadata(m.metadata());
  if (m.quantization().int8) writer.set_quantization(m.quantization());
  if (m.vocabulary()) writer.set_vocabulary(*m.vocabulary());
  if (m.target_vocabulary()) writer.set_target_vocabulary(*m.target_vocabulary());
  if (m.shortlist()) writer.set_shortlist(m.shortlist()->to_data());
  for (const TensorSpec& spec : model_tensor_specs(m.config())) {
    const TensorView* t = m.find_tensor(spec.name);
    if (t == nullptr) return Status::error(Errc::invalid_model, "tensor %s is missing", spec.name.c_str());
    if (t->dtype == DType::i8) {
      std::vector<int8_t> values(spec.element_count());
      unpack_weights_i8(t->i8(), int(spec.shape[0]), int(spec.shape[1]), values.data());
      MT_RETURN_IF_ERROR(writer.add_tensor_i8(spec.name, spec.shape, values, t->scales));
      continue;
    }
    MT_RETURN_IF_ERROR(writer.add_tensor(spec.name, spec.shape, spec.layout, t->f32_values()));
  }
  return writer;
}

Status ModelWriter::write(const std::string& path) const {
  auto bytes = serialize();
  if (!bytes) return bytes.status();
  return detail::write_file_atomically(path, *bytes);
}

}  // namespace mt
