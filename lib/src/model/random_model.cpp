// Models with seeded random weights, for tests and benchmarks.
#include <cmath>
#include <cstdint>

#include "mt/model_spec.hpp"
#include "mt/model_writer.hpp"
#include "support/splitmix64.hpp"
#include "transformer/transformer.hpp"

namespace mt {

namespace {

// SplitMix64: tiny, seedable and the same on every platform (std::
// distributions are not specified bit-for-bit).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    const uint64_t z = detail::splitmix64(state_);
    state_ += detail::kSplitMix64Gamma;
    return z;
  }
  // Uniform in [-1, 1).
  float uniform() { return float(double(next() >> 40) / double(1ull << 23) - 1.0); }

 private:
  uint64_t state_;
};

}  // namespace

Expected<ModelWriter> random_model_writer(const ModelConfig& config, uint64_t seed) {
  MT_RETURN_IF_ERROR(config.validate());
  ModelWriter writer(config);
  Rng rng(seed);
  std::vector<float> values;
  for (const TensorSpec& spec : model_tensor_specs(config)) {
    values.resize(spec.element_count());
    if (spec.role == TensorRole::positions) {
      // The sinusoid the runtime computes when none is stored (drawing no
      // random numbers): the same model with and without a stored table.
      detail::fill_positions(values.data(), int(spec.shape[0]), int(spec.shape[1]));
      MT_RETURN_IF_ERROR(writer.add_tensor(spec.name, spec.shape, spec.layout, values));
      continue;
    }
    float limit = 0.0f;
    switch (spec.role) {
      case TensorRole::weight:  // Xavier/Glorot uniform
        limit = std::sqrt(6.0f / float(spec.shape[0] + spec.shape[1]));
        break;
      case TensorRole::embedding:  // variance 1/C, so x sqrt(C) has unit variance
        limit = std::sqrt(3.0f / float(spec.shape[1]));
        break;
      case TensorRole::bias:
        limit = 0.02f;
        break;
      case TensorRole::norm_gamma:
      case TensorRole::norm_beta:
        limit = 0.1f;
        break;
      case TensorRole::positions:
        break;  // filled above
    }
    const float offset = spec.role == TensorRole::norm_gamma ? 1.0f : 0.0f;
    for (float& v : values) v = offset + limit * rng.uniform();
    MT_RETURN_IF_ERROR(writer.add_tensor(spec.name, spec.shape, spec.layout, values));
  }
  ModelMetadata meta;
  meta.tool = "libmt random_model";
  meta.extra.push_back({"seed", std::to_string(seed)});
  writer.set_metadata(meta);
  return writer;
}

Expected<std::vector<uint8_t>> random_model_bytes(const ModelConfig& config, uint64_t seed) {
  auto writer = random_model_writer(config, seed);
  if (!writer) return writer.status();
  return writer->serialize();
}

Status write_random_model(const ModelConfig& config, uint64_t seed, const std::string& path) {
  auto writer = random_model_writer(config, seed);
  if (!writer) return writer.status();
  return writer->write(path);
}

}  // namespace mt
