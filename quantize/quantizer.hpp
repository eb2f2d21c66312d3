// fp32 model -> int8 model: calibrate the activations on a text by
// translating it with libmt, quantize the weights per output channel, write
// the file (in memory), and report what happened.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "activation_stats.hpp"
#include "mt/model.hpp"

namespace mt::quantize {

struct QuantizeOptions {
  ActivationScales activations = ActivationScales::calibrated;
  MethodChoice method;  // for calibrated activations
  // Layers kept fp32: scopes starting with one of these, e.g. "output",
  // "decoder/layer_3", "encoder/layer_0/ffn". With tied embeddings the output
  // projection is the target embedding: keeping either keeps both.
  std::vector<std::string> keep_fp32;
  bool fp32_embeddings = false;
  // Translation of the calibration text: greedy, at most 2 x source + 10 tokens.
  int threads = 1;
  int batch_size = 16;
  int max_length = 256;  // source and target tokens; longer sources are cut
};

// Called as work advances: phase ("calibrating", "checking"), done, total sentences.
using Progress = std::function<void(const char* phase, size_t done, size_t total)>;

// Activation statistics of every linear layer of an fp32 model over a text,
// and the model's greedy translations of it (the reference for agreement).
struct Calibration {
  std::vector<std::string> layers;  // scope of each linear layer (ModelWeights order)
  std::vector<LayerStats> stats;    // per layer
  std::vector<std::string> fp32_translations;
  int64_t source_tokens = 0;
};

Expected<Calibration> calibrate(std::shared_ptr<const Model> fp32, const std::vector<std::string>& sentences,
                                const QuantizeOptions& options, const Progress& progress = {});

struct LayerReport {
  std::string layer;
  bool int8 = false;
  float min = 0, max = 0;   // observed input range
  InputRange range;         // chosen (calibrated activations)
  InputQuantization input;  // its u8 grid
  double clipped = 0;       // share of calibration values outside `range`
};

// Builds the int8 model file's bytes from an fp32 model and its calibration.
// Errors: an fp32 model that is already int8, or options naming no layer.
Expected<std::vector<uint8_t>> build_int8_model(const Model& fp32, const Calibration& calibration,
                                                const QuantizeOptions& options,
                                                std::vector<LayerReport>* report = nullptr);

// A model loaded from bytes it keeps alive (copied into aligned memory).
Expected<std::shared_ptr<const Model>> load_model_bytes(std::span<const uint8_t> bytes);

// Greedy translations of `sentences`, as calibrate() makes them: text for a
// model with a vocabulary, else lines of space-separated token ids (in and out).
Expected<std::vector<std::string>> translate_all(std::shared_ptr<const Model> model,
                                                 const std::vector<std::string>& sentences,
                                                 const QuantizeOptions& options, const Progress& progress = {},
                                                 const char* phase = "translating");

// How often two translations of the same sentences agree: whole lines, and
// space-separated tokens position by position (over the longer line).
struct Agreement {
  size_t sentences = 0, identical = 0;
  size_t tokens = 0, matching = 0;
  double sentence_rate() const { return sentences ? double(identical) / double(sentences) : 1.0; }
  double token_rate() const { return tokens ? double(matching) / double(tokens) : 1.0; }
};
Agreement agreement(const std::vector<std::string>& a, const std::vector<std::string>& b);

}  // namespace mt::quantize
