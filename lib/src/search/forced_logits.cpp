// Session::forced_logits: the decoder's raw logits along a given target
// (teacher forcing), what converters compare against the forward pass of
// the framework a model came from.
#include <algorithm>

#include "session/session_impl.hpp"

namespace mt {

Status Session::Impl::forced_logits(std::span<const int32_t> source, std::span<const int32_t> target,
                                    std::span<float> logits) {
  if (cuda != nullptr) return Status::error(Errc::unsupported, "forced_logits runs on CPU sessions only");
  if (!lanes.empty()) return lanes.front()->forced_logits(source, target, logits);
  const ModelConfig& cfg = model->config();
  const size_t V = size_t(cfg.target_vocab_size), n = target.size();
  if (n > size_t(plan.T)) {
    return Status::error(Errc::capacity_exceeded, "target of %zu tokens exceeds the session's max_target_length %d", n,
                         plan.T);
  }
  if (logits.size() != n * V) {
    return Status::error(Errc::invalid_argument, "forced_logits needs %zu floats (%zu tokens x %zu), got %zu", n * V, n,
                         V, logits.size());
  }
  for (const int32_t id : target) {
    if (id < 0 || size_t(id) >= V) return Status::error(Errc::invalid_argument, "target id %d is out of range", id);
  }
  const std::span<const int32_t> one[1] = {source};
  MT_RETURN_IF_ERROR(load_sources(one, TranslateOptions{}));
  if (n == 0) return {};
  encode(1);
  int* live = at<int>(plan.live_slots);
  int32_t* token = at<int32_t>(plan.live_tokens);
  float* row = at<float>(plan.logits);
  live[0] = 0;
  detail::DecoderState state = decoder_state(1);
  state.row_slot = live;
  state.row_source = live;
  const detail::DecoderBuffers buffers = decoder_buffers();
  for (size_t t = 0; t < n; ++t) {
    token[0] = t == 0 ? cfg.start_id() : target[t - 1];
    transformer->decode_step(token, 1, int(t), state, buffers, row);
    std::copy(row, row + V, logits.begin() + ptrdiff_t(t * V));
  }
  return {};
}

Status Session::forced_logits(std::span<const int32_t> source, std::span<const int32_t> target,
                              std::span<float> logits) {
  return impl_->forced_logits(source, target, logits);
}

}  // namespace mt
