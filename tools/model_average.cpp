#include "model_average.hpp"

#include <algorithm>
#include <string>
#include <vector>


namespace mt::cli {

namespace {

// The first config field in which two models differ, or "".
std::string config_difference(const ModelConfig& a, const ModelConfig& b) {
  const std::pair<const char*, bool> same[] = {
      {"encoder_layers", a.encoder_layers == b.encoder_layers},
      {"decoder_layers", a.decoder_layers == b.decoder_layers},
      {"d_model", a.d_model == b.d_model},
      {"heads", a.heads == b.heads},
      {"d_ff", a.d_ff == b.d_ff},
      {"source_vocab_size", a.source_vocab_size == b.source_vocab_size},
      {"target_vocab_size", a.target_vocab_size == b.target_vocab_size},
      {"max_positions", a.max_positions == b.max_positions},
      {"activation", a.activation == b.activation},
      {"pre_norm", a.pre_norm == b.pre_norm},
      {"layer_norm_epsilon", a.layer_norm_epsilon == b.layer_norm_epsilon},
      {"shared_embeddings", a.shared_embeddings == b.shared_embeddings},
      {"tied_output", a.tied_output == b.tied_output},
      {"special ids", a.pad_id == b.pad_id && a.bos_id == b.bos_id && a.eos_id == b.eos_id && a.unk_id == b.unk_id},
      {"embedding_scale", a.embedding_scale == b.embedding_scale},
      {"decoder_start_id", a.decoder_start_id == b.decoder_start_id},
      {"source_eos", a.source_eos == b.source_eos},
      {"stored_positions", a.stored_positions == b.stored_positions},
      {"suppressed_ids", a.suppressed_ids == b.suppressed_ids},
  };
  for (const auto& [field, equal] : same)
    if (!equal) return field;
  return "";
}

// Whether two vocabularies cut text into the same ids: pieces, their scores
// (a unigram vocabulary's choice between segmentations) and types, the
// normalization, and the pieces' model ids (a converted model's).
bool same_pieces(const VocabularyData* a, const VocabularyData* b) {
  if ((a == nullptr) != (b == nullptr)) return false;
  if (a == nullptr) return true;
  if (a->type != b->type || a->pieces.size() != b->pieces.size() || a->normalization_name != b->normalization_name ||
      a->model_ids != b->model_ids)
    return false;
  for (size_t i = 0; i < a->pieces.size(); ++i) {
    const VocabularyPiece &p = a->pieces[i], &q = b->pieces[i];
    if (p.text != q.text || p.score != q.score || p.type != q.type) return false;
  }
  return true;
}

// The language a model's metadata names, or "" when it names none.
bool languages_differ(const std::string& a, const std::string& b) { return !a.empty() && !b.empty() && a != b; }

}  // namespace

Expected<ModelWriter> average_models(std::span<const std::shared_ptr<const Model>> models) {
  if (models.size() < 2) return Status::error(Errc::invalid_argument, "averaging needs two models or more");
  const Model& first = *models[0];
  for (size_t i = 0; i < models.size(); ++i) {
    const Model& m = *models[i];
    if (m.quantization().int8) {
      return Status::error(Errc::invalid_argument,
                           "model %zu is int8: average the fp32 models, then quantize the average", i + 1);
    }
    if (const std::string field = config_difference(first.config(), m.config()); !field.empty()) {
      return Status::error(Errc::invalid_argument, "model %zu is not the first one's shape: its %s differs", i + 1,
                           field.c_str());
    }
    if (!same_pieces(first.vocabulary(), m.vocabulary()) ||
        !same_pieces(first.target_vocabulary(), m.target_vocabulary())) {
      return Status::error(Errc::invalid_argument, "model %zu has another vocabulary than the first", i + 1);
    }
    // Weights of an en-de and a de-en model over one joint vocabulary have
    // the same shapes; their mean translates neither way.
    const ModelMetadata &a = first.metadata(), &b = m.metadata();
    if (languages_differ(a.source_language, b.source_language) ||
        languages_differ(a.target_language, b.target_language)) {
      return Status::error(Errc::invalid_argument, "model %zu translates %s-%s, the first %s-%s", i + 1,
                           b.source_language.c_str(), b.target_language.c_str(), a.source_language.c_str(),
                           a.target_language.c_str());
    }
  }
  auto original = ModelWriter::from_model(first);  // vocabularies and shortlist as they are
  if (!original) return original.status();
  ModelWriter writer(first.config());
  ModelMetadata metadata = models.back()->metadata();
  std::erase_if(metadata.extra, [](const KeyValue& kv) { return kv.key == "averaged" || kv.key == "dev_bleu"; });
  metadata.extra.push_back({"averaged", std::to_string(models.size()) + " models"});
  writer.set_metadata(metadata);
  if (first.vocabulary() != nullptr) writer.set_vocabulary(*first.vocabulary());
  if (first.target_vocabulary() != nullptr) writer.set_target_vocabulary(*first.target_vocabulary());
  writer.set_shortlist(original->shortlist());
  std::vector<double> sum;
  std::vector<float> values;
  for (const TensorView& t : first.tensors()) {
    sum.assign(0, 0.0);
    for (const auto& m : models) {
      const TensorView* mine = m->find_tensor(t.name);
      if (mine == nullptr || mine->dtype != DType::f32 ||
          !std::equal(mine->shape.begin(), mine->shape.end(), t.shape.begin(), t.shape.end())) {
        return Status::error(Errc::invalid_argument, "tensor '%.*s' is not in every model with the same shape",
                             int(t.name.size()), t.name.data());
      }
      values = mine->f32_values();
      sum.resize(values.size(), 0.0);
      for (size_t j = 0; j < values.size(); ++j) sum[j] += double(values[j]);
    }
    for (size_t j = 0; j < values.size(); ++j) values[j] = float(sum[j] / double(models.size()));
    const std::vector<uint32_t> shape(t.shape.begin(), t.shape.end());
    MT_RETURN_IF_ERROR(writer.add_tensor(std::string(t.name), shape, t.layout, values));
  }
  return writer;
}

}  // namespace mt::cli
