// The training loop of mt_train, as a library so tests can drive it: token-
// batched epochs in a seeded order, teacher-forced loss with label smoothing
// and dropout, Adam, dev loss, and checkpoints that resume exactly (weights,
// optimizer moments, dropout stream, batch order and position).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/graph.hpp"
#include "data/parallel_corpus.hpp"
#include "device_backend.hpp"
#include "distributed/communicator.hpp"
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
  // Data-parallel training (distributed/communicator.hpp): every rank builds
  // the same batches and takes its share of each (a contiguous slice of the
  // batch's sentences); the gradients, token counts and losses are summed
  // over the ranks before the same Adam update on every rank. Null: one
  // process, as before. Not owned.
  Communicator* communicator = nullptr;
  // One process computing each batch as `slices` ranks would (0 or 1: the
  // whole batch at once, as always): the slices' gradients are summed in
  // slice order, as the ranks' are, and each slice draws dropout masks from
  // a stream of its own, so N ranks and one process with slices = N give the
  // same run bit for bit. With a communicator of N > 1 ranks it is N.
  int slices = 0;
  // Called at the start of every epoch (also the one a checkpoint resumes)
  // before its batches are cut, to re-tokenize the training pairs
  // (SegmentationSampler::resegment: subword regularization). It must depend
  // on the epoch alone, so a resumed run rebuilds the same epoch; an error
  // it returns is thrown. Null: the pairs stay as read.
  std::function<Status(int epoch, std::vector<SentencePair>* pairs)> resegment;
  // Fine-tuning: the weights of this model file (fp32, its config = `model`)
  // instead of the seeded initialisation.
  std::shared_ptr<const Model> init;
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
  // `train` must hold a pair at least (std::invalid_argument otherwise).
  Trainer(const TrainerOptions& options, std::vector<SentencePair> train);

  // One optimizer update on the next batch (a new epoch starts when the last one ends).
  StepStats step();
  // Mean loss and nll per token over `pairs` without dropout (no update).
  StepStats evaluate(const std::vector<SentencePair>& pairs);

  int64_t steps() const { return device_ ? device_->steps() : adam_.steps(); }
  // Multiplies the learning rate of the steps from the next on (Adam's
  // set_learning_rate_scale): mt_train's cooldown by time. Every rank must
  // set the same value.
  void set_learning_rate_scale(double scale) {
    adam_.set_learning_rate_scale(scale);
    if (device_) device_->set_learning_rate_scale(scale);
  }
  // Where the steps run, for logs: "CPU" or the CUDA backend's description.
  std::string device() const { return device_ ? device_->describe() : "CPU"; }
  int epoch() const { return epoch_; }                 // 0-based epoch of the next batch
  size_t batch_in_epoch() const { return position_; }  // batches of this epoch already done
  size_t batches_per_epoch() const { return batches_.size(); }
  // The current weights (brought back from the device first when training there).
  TransformerModel<float>& model();

  // Everything needed to continue exactly as if never stopped. Not const:
  // on a GPU the weights are first brought back into the CPU model.
  // `notes`: the caller's own state at this step, kept in the same file so
  // it can never belong to another step (mt_train: the best dev BLEU and the
  // evaluations since); load_checkpoint gives it back, empty from a
  // checkpoint saved without.
  Status save_checkpoint(const std::string& path, const std::string& notes = {});
  Status load_checkpoint(const std::string& path, std::string* notes = nullptr);

 private:
  void start_epoch(int epoch);

  // A batch cut into slices (ranks, or TrainerOptions::slices): this
  // process's slices' gradients summed in order, then over the ranks.
  StepStats device_step(const std::vector<uint32_t>& all, const ForwardOptions& fo);
  StepStats sliced_step(const std::vector<uint32_t>& batch, const ForwardOptions& fo, int slices);
  // Adds this rank's gradients to flat_ (or sets them, when `first`).
  void accumulate(bool first);

  TrainerOptions o_;
  int rank_ = 0, ranks_ = 1;
  std::vector<float> flat_;  // the gradients of every parameter, back to back (reduce)
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
