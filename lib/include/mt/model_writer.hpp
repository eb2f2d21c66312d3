// Writes libmt model files: used by the random-model tool, the trainer and the
// quantizer. Only lib/ knows the file format.
#pragma once

#include "mt/export.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mt/model.hpp"
#include "mt/vocabulary.hpp"

namespace mt {

class MT_API ModelWriter {
 public:
  explicit ModelWriter(const ModelConfig& config);
  // A writer holding all of a model: config, metadata, vocabularies,
  // quantization and every tensor (int8 ones unpacked, to be packed again
  // byte for byte the same), e.g. to write it again with other metadata or
  // in the current format version.
  static Expected<ModelWriter> from_model(const Model& model);

  void set_metadata(const ModelMetadata& metadata) { metadata_ = metadata; }
  const ModelMetadata& metadata() const { return metadata_; }
  // The tokenizer's vocabulary; its size must equal the config's vocabulary
  // sizes, unless it has model_ids (then a target vocabulary is needed).
  void set_vocabulary(const VocabularyData& vocabulary) { vocabulary_ = vocabulary; }
  // The vocabulary target ids decode with (piece index = target id), for
  // models whose source vocabulary has model_ids (format version 3).
  void set_target_vocabulary(const VocabularyData& vocabulary) { target_vocabulary_ = vocabulary; }
  // Int8 models: how activations are quantized (ModelQuantization::int8 is
  // derived from the tensors and ignored here).
  void set_quantization(const ModelQuantization& quantization) { quantization_ = quantization; }
  // The vocabulary shortlist (checked against the config when written), or
  // none (nullopt) to write the model without one.
  void set_shortlist(std::optional<ShortlistData> shortlist) { shortlist_ = std::move(shortlist); }
  const std::optional<ShortlistData>& shortlist() const { return shortlist_; }
  // Format version to write; by default the oldest that holds the file: 2,
  // or 3 when it uses a version 3 feature (a config field or vocabulary part of version 3). Tests
  // write version 1 files (fp32, Piece tables) to check older files still
  // load, and unknown versions to check they are refused.
  void set_format_version(uint32_t version) { format_version_ = version; }
  // The version write() and serialize() will write, given the config so far.
  uint32_t format_version() const;

  // Adds an fp32 tensor whose values are given row-major; they are packed for
  // the kernels when `layout` is packed_n16 (2-D weights [N, K]).
  Status add_tensor(const std::string& name, const std::vector<uint32_t>& shape, Layout layout,
                    std::span<const float> values);
  // Adds an int8 tensor [N, K] (values row-major) with one scale per row,
  // stored packed_k4n16.
  Status add_tensor_i8(const std::string& name, const std::vector<uint32_t>& shape, std::span<const int8_t> values,
                       std::span<const float> scales);

  // The whole file in memory.
  Expected<std::vector<uint8_t>> serialize() const;
  // Writes the file atomically: a temporary file renamed over `path`, so a
  // failure never leaves a partial model behind.
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<uint32_t> shape;
    Layout layout;
    std::vector<uint8_t> bytes;
    std::vector<float> scales;  // int8 only
  };
  Status check_new(const std::string& name, const std::vector<uint32_t>& shape, size_t values) const;
  const char* version_3_feature() const;  // the first thing only version 3 holds, or null
  ModelConfig config_;
  ModelMetadata metadata_;
  VocabularyData vocabulary_;
  VocabularyData target_vocabulary_;
  ModelQuantization quantization_;
  std::optional<ShortlistData> shortlist_;
  std::optional<uint32_t> format_version_;
  std::vector<PendingTensor> tensors_;
};

// A model of any config with seeded random weights (Xavier-uniform linear
// layers, N(0, 1/d_model) embeddings, unit LayerNorm), for tests and benchmarks.
// Same seed, same bytes, on every platform.
MT_API Status write_random_model(const ModelConfig& config, uint64_t seed, const std::string& path);
MT_API Expected<std::vector<uint8_t>> random_model_bytes(const ModelConfig& config, uint64_t seed);
// The writer filled with random weights, for callers that change something before writing.
MT_API Expected<ModelWriter> random_model_writer(const ModelConfig& config, uint64_t seed);

}  // namespace mt
