// Checkpoint averaging: the element-wise mean of the weights of models of one
// config and vocabulary, e.g. a run's last epochs (Vaswani et al. 2017, §6.1:
// the base models average the last 5 checkpoints, the big ones 20). Used by
// `mt_model average` and `mt_train --average-last`.
#pragma once

#include <memory>
#include <span>

#include "mt/model.hpp"
#include "mt/model_writer.hpp"

namespace mt::cli {

// A writer holding the first model's config, vocabularies and shortlist,
// the last model's metadata (its steps and epochs: models given oldest
// first) less a dev_bleu the mean was never scored for, plus averaged=N, and
// each tensor the mean of the models' (in double, rounded once). Errors: fewer than two models, an int8 one (average the fp32 models,
// then quantize), or one whose config or vocabulary differs from the first's
// (naming the field).
Expected<ModelWriter> average_models(std::span<const std::shared_ptr<const Model>> models);

}  // namespace mt::cli
