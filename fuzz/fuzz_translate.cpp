// translate() with arbitrary options and inputs on micro models (fp32, int8
// calibrated, int8 dynamic): out-of-range options, too many sentences, ids
// outside the vocabulary, over-long sources. Every call returns an error or
// results that respect the options: one entry per sentence, n-best counts,
// ids in the vocabulary, lengths within the limits.
#include <cmath>
#include <cstdlib>

#include "fuzz_util.hpp"
#include "quantizer.hpp"

namespace {

struct Fixture {
  std::vector<std::shared_ptr<const mt::Model>> models;
  std::vector<mt::Session> sessions;
};

std::shared_ptr<const mt::Model> int8_copy(std::shared_ptr<const mt::Model> fp32, mt::ActivationScales activations) {
  mt::quantize::QuantizeOptions o;
  o.activations = activations;
  o.max_length = 12;
  auto calibration = mt::quantize::calibrate(fp32, {"5 6 7 8", "9 10 11", "12 13 14 15 16 17"}, o);
  if (!calibration) std::abort();
  auto bytes = mt::quantize::build_int8_model(*fp32, *calibration, o);
  if (!bytes) std::abort();
  auto model = mt::quantize::load_model_bytes(*bytes);
  if (!model) std::abort();
  return *model;
}

Fixture& fixture() {
  static Fixture f = [] {
    Fixture out;
    auto bytes = mt::random_model_bytes(mt::fuzz::micro_config(), 3);
    if (!bytes) std::abort();
    auto fp32 = mt::quantize::load_model_bytes(*bytes);
    if (!fp32) std::abort();
    out.models = {*fp32, int8_copy(*fp32, mt::ActivationScales::calibrated),
                  int8_copy(*fp32, mt::ActivationScales::dynamic_per_row)};
    for (const auto& m : out.models) {
      mt::SessionOptions so;
      so.max_batch_size = 4;
      so.max_source_length = 16;
      so.max_target_length = 12;
      so.max_beam_size = 4;
      auto s = mt::Session::create(m, so);
      if (!s) std::abort();
      out.sessions.push_back(std::move(*s));
    }
    return out;
  }();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Fixture& f = fixture();
  mt::fuzz::Reader in(data, size);
  mt::Session& session = f.sessions[in.byte() % f.sessions.size()];
  const int vocab = session.model().config().target_vocab_size;
  mt::TranslateOptions o;
  o.beam_size = in.range(1, 4);
  o.num_hypotheses = in.range(1, 4);
  o.length_penalty = (in.byte() & 1) ? in.f32() : float(in.byte()) / 64.0f;
  o.max_decoding_length = in.range(0, 12);
  o.min_decoding_length = in.range(0, 12);
  o.max_length_ratio = (in.byte() & 1) ? in.f32() : float(in.byte()) / 32.0f;
  o.max_length_offset = in.range(0, 12);
  o.truncate_long_sources = in.byte() & 1;

  const int sentences = in.range(0, 4);
  std::vector<std::vector<int32_t>> ids(size_t(std::clamp(sentences, 0, 8)));
  for (auto& s : ids) {
    s.resize(size_t(in.byte() % 24));
    for (int32_t& t : s) t = int32_t(in.byte()) - 4;  // a few negative, some past the vocabulary
  }
  const std::vector<std::span<const int32_t>> batch(ids.begin(), ids.end());
  mt::Translations out;
  if (!session.translate(batch, o, &out).ok()) return 0;

  const int limit = o.max_decoding_length > 0 ? o.max_decoding_length : session.options().max_target_length;
  if (out.size() != batch.size()) std::abort();
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].empty() || int(out[i].size()) > o.num_hypotheses) std::abort();
    for (const mt::Hypothesis& h : out[i]) {
      if (int(h.tokens.size()) > limit) std::abort();
      for (int32_t t : h.tokens)
        if (t < 0 || t >= vocab) std::abort();
      if (std::isnan(h.score) || std::isnan(h.log_prob)) std::abort();
    }
  }
  return 0;
}
