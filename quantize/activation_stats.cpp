#include "activation_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "mt/kernels.h"

namespace mt::quantize {

namespace {

// Candidate ranges of the search methods: the observed range shrunk by these
// factors, both ends alike (so a one-sided range, e.g. after ReLU, stays so).
constexpr int kShrinkSteps = 160;
double shrink_factor(int i) { return std::pow(0.98, i); }  // 1 down to ~0.04
constexpr int kMinEntropyBins = 4 * 256;

}  // namespace

std::string MethodChoice::name() const {
  switch (method) {
    case Method::max:
      return "max";
    case Method::mse:
      return "mse";
    case Method::entropy:
      return "entropy";
    case Method::percentile: {
      char buf[48];
      std::snprintf(buf, sizeof(buf), "percentile %g", percentile);
      return buf;
    }
  }
  return "?";
}

Expected<MethodChoice> MethodChoice::parse(const std::string& text) {
  if (text == "max") return MethodChoice{Method::max, 0};
  if (text == "mse") return MethodChoice{Method::mse, 0};
  if (text == "entropy") return MethodChoice{Method::entropy, 0};
  if (text == "percentile") return MethodChoice{Method::percentile, 99.99};
  if (text.rfind("percentile", 0) == 0) {
    size_t i = 10;
    while (i < text.size() && (text[i] == ' ' || text[i] == ':' || text[i] == '=')) ++i;
    const std::string number = text.substr(i);
    char* end = nullptr;
    const double p = std::strtod(number.c_str(), &end);
    if (!number.empty() && *end == '\0' && p > 50.0 && p <= 100.0) return MethodChoice{Method::percentile, p};
  }
  return Status::error(Errc::invalid_argument,
                       "unknown calibration method '%s' (max, percentile [P], mse, entropy; P in (50, 100])",
                       text.c_str());
}

InputQuantization quantization_of(InputRange r) {
  InputQuantization q;
  quantize_range_u8(r.lo, r.hi, &q.scale, &q.zero_point);
  return q;
}

void LayerStats::observe_range(const float* x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    // NaN never enters (the comparisons fail); infinities would make the
    // range useless, and fp32 models with non-finite weights are refused.
    if (!std::isfinite(x[i])) continue;
    if (count_ == 0 || x[i] < min_) min_ = x[i];
    if (count_ == 0 || x[i] > max_) max_ = x[i];
    ++count_;
  }
}

void LayerStats::freeze() {
  const double lo = std::min(0.0f, min_), hi = std::max(0.0f, max_);
  span_lo_ = lo;
  bin_width_ = hi > lo ? (hi - lo) / kBins : 1.0;
  histogram_.assign(kBins, 0);
}

void LayerStats::observe_histogram(const float* x, size_t n) {
  const double inv = 1.0 / bin_width_;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    const int b = int((double(x[i]) - span_lo_) * inv);
    ++histogram_[size_t(std::clamp(b, 0, kBins - 1))];
  }
}

InputRange LayerStats::choose(const MethodChoice& choice) const {
  const InputRange full{std::min(0.0f, min_), std::max(0.0f, max_)};
  if (count_ == 0 || full.hi == full.lo) return full;
  switch (choice.method) {
    case Method::max:
      return full;
    case Method::percentile:
      return percentile_range(choice.percentile);
    case Method::mse:
      return mse_range();
    case Method::entropy:
      return entropy_range();
  }
  return full;
}

// The ends that leave (100 - p) % of the values outside on each side.
InputRange LayerStats::percentile_range(double percentile) const {
  uint64_t total = 0;
  for (uint64_t c : histogram_) total += c;
  const double tail = double(total) * (100.0 - percentile) / 100.0;
  int lo_bin = 0, hi_bin = kBins - 1;
  for (double below = 0; lo_bin < kBins - 1 && below + double(histogram_[size_t(lo_bin)]) <= tail; ++lo_bin) {
    below += double(histogram_[size_t(lo_bin)]);
  }
  for (double above = 0; hi_bin > 0 && above + double(histogram_[size_t(hi_bin)]) <= tail; --hi_bin) {
    above += double(histogram_[size_t(hi_bin)]);
  }
  InputRange r{float(span_lo_ + lo_bin * bin_width_), float(span_lo_ + (hi_bin + 1) * bin_width_)};
  r.lo = std::min(r.lo, 0.0f);
  r.hi = std::max(r.hi, 0.0f);
  if (min_ >= 0.0f) r.lo = 0.0f;  // one-sided inputs stay one-sided
  return r;
}

double LayerStats::squared_error(InputRange range) const {
  const InputQuantization q = quantization_of(range);
  const double step = q.scale;
  // Representable ends of the grid.
  const double lo = (0 - q.zero_point) * step, hi = (255 - q.zero_point) * step;
  double error = 0;
  for (int b = 0; b < kBins; ++b) {
    if (histogram_[size_t(b)] == 0) continue;
    const double c = bin_center(b);
    const double e = c < lo ? (lo - c) * (lo - c) : c > hi ? (c - hi) * (c - hi) : step * step / 12.0;
    error += double(histogram_[size_t(b)]) * e;
  }
  return error;
}

InputRange LayerStats::mse_range() const {
  const InputRange full{std::min(0.0f, min_), std::max(0.0f, max_)};
  InputRange best = full;
  double best_error = squared_error(full);
  for (int i = 1; i < kShrinkSteps; ++i) {
    const float s = float(shrink_factor(i));
    const InputRange r{full.lo * s, full.hi * s};
    const double e = squared_error(r);
    if (e < best_error) best_error = e, best = r;
  }
  return best;
}

// KL divergence between the histogram clipped to a range (P: values outside
// folded into the end bins) and its quantized version (Q: each of the 256
// levels spreads its mass evenly over the non-empty bins it covers); the
// range with the least divergence wins (the "entropy" calibration of
// TensorRT, on asymmetric ranges). Only ranges of at least kMinEntropyBins
// bins compete: over fewer, every level holds about one bin, Q equals P and
// the divergence vanishes however coarse the grid really is.
InputRange LayerStats::entropy_range() const {
  const InputRange full{std::min(0.0f, min_), std::max(0.0f, max_)};
  InputRange best = full;
  double best_kl = INFINITY;
  std::vector<double> p(kBins), level_mass(256), level_bins(256);
  for (int i = 0; i < kShrinkSteps; ++i) {
    const float s = float(shrink_factor(i));
    const InputRange r{full.lo * s, full.hi * s};
    const int b0 = std::clamp(int((r.lo - span_lo_) / bin_width_), 0, kBins - 1);
    const int b1 = std::clamp(int(std::ceil((r.hi - span_lo_) / bin_width_)) - 1, b0, kBins - 1);
    if (b1 - b0 + 1 < kMinEntropyBins) break;
    std::fill(p.begin(), p.end(), 0.0);
    double total = 0;
    for (int b = 0; b < kBins; ++b) {
      p[size_t(std::clamp(b, b0, b1))] += double(histogram_[size_t(b)]);
      total += double(histogram_[size_t(b)]);
    }
    if (total == 0) return full;
    const double bins = double(b1 - b0 + 1);
    auto level_of = [&](int b) { return std::min(255, int((b - b0) * 256.0 / bins)); };
    std::fill(level_mass.begin(), level_mass.end(), 0.0);
    std::fill(level_bins.begin(), level_bins.end(), 0.0);
    for (int b = b0; b <= b1; ++b) {
      if (p[size_t(b)] == 0) continue;
      level_mass[size_t(level_of(b))] += p[size_t(b)];
      level_bins[size_t(level_of(b))] += 1;
    }
    double kl = 0;
    for (int b = b0; b <= b1; ++b) {
      if (p[size_t(b)] == 0) continue;
      const int l = level_of(b);
      const double pb = p[size_t(b)] / total, qb = level_mass[size_t(l)] / level_bins[size_t(l)] / total;
      kl += pb * std::log(pb / qb);
    }
    if (kl < best_kl) best_kl = kl, best = r;
  }
  return best;
}

double LayerStats::clipped_share(InputRange range) const {
  uint64_t total = 0, clipped = 0;
  for (int b = 0; b < kBins; ++b) {
    const double c = bin_center(b);
    total += histogram_[size_t(b)];
    if (c < range.lo || c > range.hi) clipped += histogram_[size_t(b)];
  }
  return total == 0 ? 0.0 : double(clipped) / double(total);
}

}  // namespace mt::quantize
