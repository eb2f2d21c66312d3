// The trainer's Transformer: the same function as the runtime's
// (lib/src/transformer/transformer.cpp), written with the autograd ops (the forward pass
// itself is model/transformer_forward.hpp, shared with the CUDA model), its
// parameters named and shaped as model_spec.hpp says, so exporting is a copy.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "autograd/ops.hpp"
#include "data/parallel_corpus.hpp"
#include "model/transformer_forward.hpp"
#include "mt/model.hpp"
#include "mt/model_writer.hpp"

namespace mt::train {

template <class T>
class TransformerModel {
 public:
  // Creates every parameter of `config` in the graph (zero values).
  TransformerModel(autograd::Graph<T>& graph, const ModelConfig& config);

  // Seeded initialisation: Xavier-uniform linear weights, N(0, 1/C)-scale
  // uniform embeddings, zero biases, unit LayerNorm.
  void initialize(uint64_t seed);
  // The weights of a libmt model file of this config (fine-tuning): every
  // tensor fp32 and of this config's shape, else an error naming it.
  Status initialize_from(const Model& model);

  // Teacher-forced forward: logits [B*T, V] for the batch's target positions.
  autograd::Tensor<T>* forward(const Batch& batch, const ForwardOptions& options);
  // Forward + label-smoothed cross-entropy summed over the batch's labels.
  autograd::CrossEntropy<T> loss(const Batch& batch, const ForwardOptions& options);

  autograd::Tensor<T>* parameter(const std::string& name) const { return params_.at(name); }
  // The model's own position table (config.stored_positions), row-major
  // [max_positions, d_model]: a constant, not a parameter; empty otherwise.
  const std::vector<float>& positions() const { return positions_; }
  const ModelConfig& config() const { return config_; }

  // A libmt model file of the current weights (fp32), with vocabulary and
  // metadata (and the vocabulary target ids decode with, when it has one).
  Status export_model(const std::string& path, const VocabularyData* vocabulary, const ModelMetadata& metadata,
                      const VocabularyData* target_vocabulary = nullptr) const;

 private:
  autograd::Graph<T>& g_;
  ModelConfig config_;
  std::map<std::string, autograd::Tensor<T>*> params_;
  std::vector<float> positions_;
};

extern template class TransformerModel<float>;
extern template class TransformerModel<double>;

}  // namespace mt::train
