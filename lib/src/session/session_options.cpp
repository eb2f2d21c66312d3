// The checks of SessionOptions and TranslateOptions: each refusal names the
// option, its value and the range it must be in.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "mt/session.hpp"

namespace mt {

Status SessionOptions::validate(const ModelConfig& config) const {
  auto bad = [](const char* field, int value, const char* why) {
    return Status::error(Errc::invalid_argument, "session option %s = %d: %s", field, value, why);
  };
  if (max_batch_size < 1 || max_batch_size > 65536)
    return bad("max_batch_size", max_batch_size, "must be in [1, 65536]");
  if (max_source_length < 1 || max_source_length > config.max_positions)
    return Status::error(Errc::invalid_argument,
                         "session option max_source_length = %d: must be in [1, %d] (the model's max_positions)",
                         max_source_length, config.max_positions);
  if (max_target_length < 1 || max_target_length > config.max_positions)
    return Status::error(Errc::invalid_argument,
                         "session option max_target_length = %d: must be in [1, %d] (the model's max_positions)",
                         max_target_length, config.max_positions);
  // The session indexes source tokens with int: B x S must stay far from INT_MAX.
  if (int64_t(max_batch_size) * max_source_length > (int64_t(1) << 28))
    return Status::error(Errc::invalid_argument,
                         "session options max_batch_size x max_source_length = %lld tokens: at most %lld",
                         static_cast<long long>(int64_t(max_batch_size) * max_source_length), 1LL << 28);
  if (max_beam_size < 1 || max_beam_size > 256) return bad("max_beam_size", max_beam_size, "must be in [1, 256]");
  if (max_beam_size >= config.target_vocab_size)
    return bad("max_beam_size", max_beam_size, "must be smaller than the target vocabulary");
  if (num_threads < 1 || num_threads > 256) return bad("num_threads", num_threads, "must be in [1, 256]");
  if (!kHasThreads && num_threads != 1)
    return bad("num_threads", num_threads, "must be 1: this build of libmt has no threads (WebAssembly)");
  // At least one UTF-8 character (4 bytes): running text is cut into pieces
  // of whole characters, each of which must fit.
  if (max_text_bytes < 4 || max_text_bytes > (1 << 24))
    return bad("max_text_bytes", max_text_bytes, "must be in [4, 16777216]");
  if (device != Device::cpu && device != Device::cuda) return bad("device", int(device), "must be cpu (0) or cuda (1)");
  if (thread_split != ThreadSplit::automatic && thread_split != ThreadSplit::layers &&
      thread_split != ThreadSplit::sentences)
    return bad("thread_split", int(thread_split), "must be automatic (0), layers (1) or sentences (2)");
  if (cuda_device < 0 || cuda_device > 1023) return bad("cuda_device", cuda_device, "must be in [0, 1023]");
  if (alignment_layer < -1 || alignment_layer >= config.decoder_layers)
    return Status::error(Errc::invalid_argument,
                         "session option alignment_layer = %d: must be in [-1, %d) (-1: the model's own)",
                         alignment_layer, config.decoder_layers);
  if (alignments && device == Device::cuda)
    return Status::error(Errc::unsupported, "session option alignments: CPU sessions only");
  return {};
}

Status TranslateOptions::validate(const SessionOptions& session) const {
  auto bad = [](const char* field, int value, const char* why, int limit) {
    char reason[96];
    std::snprintf(reason, sizeof(reason), why, limit);
    return Status::error(Errc::invalid_argument, "translate option %s = %d: %s", field, value, reason);
  };
  if (beam_size < 1 || beam_size > session.max_beam_size)
    return bad("beam_size", beam_size, "must be in [1, %d] (the session's max_beam_size)", session.max_beam_size);
  if (num_hypotheses < 1 || num_hypotheses > beam_size)
    return bad("num_hypotheses", num_hypotheses, "must be in [1, beam_size = %d]", beam_size);
  if (max_decoding_length < 0 || max_decoding_length > session.max_target_length)
    return bad("max_decoding_length", max_decoding_length, "must be in [0, %d] (0: the session's max_target_length)",
               session.max_target_length);
  if (min_decoding_length < 0 || min_decoding_length > session.max_target_length)
    return bad("min_decoding_length", min_decoding_length, "must be in [0, %d]", session.max_target_length);
  if (!std::isfinite(length_penalty) || length_penalty < 0.0f || length_penalty > 10.0f)
    return Status::error(Errc::invalid_argument, "translate option length_penalty = %g: must be in [0, 10]",
                         double(length_penalty));
  if (!std::isfinite(max_length_ratio) || max_length_ratio < 0.0f || max_length_ratio > 1000.0f)
    return Status::error(Errc::invalid_argument,
                         "translate option max_length_ratio = %g: must be in [0, 1000] (0: off)",
                         double(max_length_ratio));
  if (max_length_offset < 0 || max_length_offset > session.max_target_length)
    return bad("max_length_offset", max_length_offset, "must be in [0, %d]", session.max_target_length);
  // Compared without adding to the caller's size, which may be SIZE_MAX.
  if (source_prefix.size() >= size_t(std::max(session.max_source_length, 1)) - 1)
    return bad("source_prefix", int(std::min<size_t>(source_prefix.size(), 1 << 30)),
               "ids: must leave room for a source token and EOS (max_source_length %d)", session.max_source_length);
  if (target_prefix.size() >= size_t(session.max_target_length))
    return bad("target_prefix", int(std::min<size_t>(target_prefix.size(), 1 << 30)),
               "ids: must be fewer than the session's max_target_length %d", session.max_target_length);
  if (alternatives < 0 || alternatives > session.max_beam_size)
    return bad("alternatives", alternatives, "must be in [0, %d] (the session's max_beam_size; 0: off)",
               session.max_beam_size);
  if (no_repeat_ngram_size < 0 || no_repeat_ngram_size > session.max_target_length)
    return bad("no_repeat_ngram_size", no_repeat_ngram_size, "must be in [0, %d] (0: off)", session.max_target_length);
  if (!std::isfinite(repetition_penalty) || repetition_penalty < 1.0f || repetition_penalty > 100.0f)
    return Status::error(Errc::invalid_argument,
                         "translate option repetition_penalty = %g: must be in [1, 100] (1: off)",
                         double(repetition_penalty));
  if (cache != nullptr && session.alignments) {
    return Status::error(Errc::invalid_argument,
                         "translate option cache: a session with alignments takes none (entries hold no alignments)");
  }
  if (session.device == Device::cuda && (on_token || cancel != nullptr)) {
    return Status::error(Errc::unsupported, "translate options on_token and cancel: CPU sessions only");
  }
  if (session.device == Device::cuda && (!prefixes.empty() || !text_prefixes.empty() || alternatives > 0 ||
                                         no_repeat_ngram_size > 0 || repetition_penalty != 1.0f)) {
    return Status::error(Errc::unsupported,
                         "translate options prefixes, alternatives, no_repeat_ngram_size and repetition_penalty: "
                         "CPU sessions only");
  }
  return {};
}

}  // namespace mt
