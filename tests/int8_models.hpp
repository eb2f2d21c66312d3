// int8 models made in a test by mt_quantize's library (link mt_quantize_lib).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "mt/mt.hpp"
#include "quantizer.hpp"

namespace mt::test {

// An int8 copy of `fp32` calibrated on `lines` (calibration translations of
// at most 16 tokens: random models rarely stop), checked to be int8 with
// the asked activation scales, so that a test cannot pass on an fp32 model.
inline std::shared_ptr<const Model> int8_model(std::shared_ptr<const Model> fp32, const std::vector<std::string>& lines,
                                               ActivationScales activations) {
  quantize::QuantizeOptions o;
  o.activations = activations;
  o.max_length = 16;
  auto calibration = quantize::calibrate(fp32, lines, o);
  INFO(calibration.status().message());
  REQUIRE(calibration.ok());
  auto bytes = quantize::build_int8_model(*fp32, *calibration, o);
  INFO(bytes.status().message());
  REQUIRE(bytes.ok());
  auto model = quantize::load_model_bytes(*bytes);
  INFO(model.status().message());
  REQUIRE(model.ok());
  const Model& m = **model;
  REQUIRE(m.quantization().int8);
  REQUIRE(m.quantization().activations == activations);
  REQUIRE((activations == ActivationScales::dynamic_per_row) == m.quantization().inputs.empty());
  const auto tensors = m.tensors();
  REQUIRE(std::any_of(tensors.begin(), tensors.end(), [](const TensorView& t) { return t.dtype == DType::i8; }));
  return model.value();
}

}  // namespace mt::test
