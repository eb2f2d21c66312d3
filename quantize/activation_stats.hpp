// Statistics of the inputs of one linear layer over a calibration text, and
// the input ranges the calibration methods choose from them.
//
// Two passes: the first finds each layer's range [min, max]; the second fills
// a histogram over that range (widened to include 0). The methods then pick
// a clipping range [lo, hi] (lo <= 0 <= hi), quantized as
//   scale = (hi - lo) / 255,  zero_point = round(-lo / scale),
// the same asymmetric u8 grid the runtime uses for per-row dynamic scales.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mt/status.hpp"

namespace mt::quantize {

enum class Method {
  max,         // the whole observed range
  percentile,  // clip the given share of values at each end
  mse,         // the range with the least expected squared error
  entropy,     // the range whose quantized histogram keeps the most information (KL divergence)
};

struct MethodChoice {
  Method method = Method::percentile;
  double percentile = 99.99;  // for Method::percentile

  std::string name() const;  // "max", "percentile 99.99", "mse", "entropy"
  // Parses those names ("percentile" alone means 99.99).
  static Expected<MethodChoice> parse(const std::string& text);
};

struct InputRange {
  float lo = 0.0f, hi = 0.0f;  // lo <= 0 <= hi
};

struct InputQuantization {
  float scale = 1.0f;
  int32_t zero_point = 0;
};

// The u8 grid of a range, exactly as the runtime's dynamic rows compute it
// (mt/kernels.h, quantize_range_u8; scale 1 for an empty range).
InputQuantization quantization_of(InputRange range);

class LayerStats {
 public:
  static constexpr int kBins = 2048;

  // Pass 1.
  void observe_range(const float* x, size_t n);
  // Fixes the histogram's span to [min(0, min), max(0, max)]; then pass 2.
  void freeze();
  void observe_histogram(const float* x, size_t n);

  InputRange choose(const MethodChoice& choice) const;
  // Share of the observed values outside `range` (clipped when quantized).
  double clipped_share(InputRange range) const;

  bool seen() const { return count_ > 0; }
  float min() const { return min_; }
  float max() const { return max_; }
  uint64_t count() const { return count_; }

 private:
  InputRange percentile_range(double percentile) const;
  InputRange mse_range() const;
  InputRange entropy_range() const;
  double bin_center(int b) const { return span_lo_ + (b + 0.5) * bin_width_; }
  // Expected squared quantization error of the histogram's values for `range`.
  double squared_error(InputRange range) const;

  float min_ = 0.0f, max_ = 0.0f;
  uint64_t count_ = 0;
  double span_lo_ = 0.0, bin_width_ = 0.0;
  std::vector<uint64_t> histogram_;
};

}  // namespace mt::quantize
