// The training loop of mt_train, as a library so tests can drive it: token-
// batched epochs in a seeded order, teacher-forced loss with label smoothing
// and dropout, Adam, dev loss, and checkpoints that resume exactly (weights,
// optimizer moments, dropout stream, batch order and position).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "autograd/graph.hpp"
#include "data/parallel_corpus.hpp"
#include "device_backend.hpp"
#include "model/transformer_model.hpp"
#include "mt/session.hpp"  // Device
#include "optim/adam.hpp"

namespace mt::train {

struct TrainerOptions {
  ModelConfig model;
  AdamOptions adam;
  BatchingOptions batching;
  double dropout = 0.1;
  double label_smoothing = 0.1;
  uint64_t seed = 1;
  int threads = 1;
  // Device::cuda runs every step on the GPU (device_backend.hpp); the
  // Trainer's constructor throws when CUDA is unavailable (check first with
  // cuda_training_unavailable_reason()).
  Device device = Device::cpu;
};

struct StepStats {
  double loss = 0.0;   // label-smoothed loss per target token
  double nll = 0.0;    // negative log-likelihood per target token (perplexity = exp(nll))
  int64_t tokens = 0;  // target tokens of the batch
  double grad_norm = 0.0;
  double learning_rate = 0.0;
};

class Trainer {
 public:
  Trainer(const TrainerOptions& options, std::vector<SentencePair> train);

  // One optimizer update on the next batch (a new epoch starts when the last one ends).
  StepStats step();
  // Mean loss and nll per token over `pairs` without dropout (no update).
  StepStats evaluate(const std::vector<SentencePair>& pairs);

  int64_t steps() const { return device_ ? device_->steps() : adam_.steps(); }
  int epoch() const { return epoch_; }                 // 0-based epoch of the next batch
  size_t batch_in_epoch() const { return position_; }  // batches of this epoch already done
  size_t batches_per_epoch() const { return batches_.size(); }
  // The current weights (brought back from the device first when training there).
  TransformerModel<float>& model();

  // Everything needed to continue exactly as if never stopped. Not const:
  // on a GPU the weights are first brought back into the CPU model.
  Status save_checkpoint(const std::string& path);
  Status load_checkpoint(const std::string& path);

 private:
  void start_epoch(int epoch);

  TrainerOptions o_;
  std::vector<SentencePair> train_;
  autograd::Graph<float> graph_;
  TransformerModel<float> model_;
  Adam<float> adam_;
  std::unique_ptr<DeviceBackend> device_;  // set when training on a GPU
  std::vector<std::vector<uint32_t>> batches_;
  int epoch_ = 0;
  size_t position_ = 0;
};

}  // namespace mt::train
