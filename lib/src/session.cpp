// Sessions: memory planning, creation, input checks and the translate() entry.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "model_weights.hpp"
#include "arena.hpp"
#include "session_impl.hpp"

namespace mt {

using detail::SessionPlan;

Status SessionOptions::validate(const ModelConfig& config) const {
  auto bad = [](const char* field, int value, const char* why) {
    return Status::error(Errc::invalid_argument, "session option %s = %d: %s", field, value, why);
  };
  if (max_batch_size < 1 || max_batch_size > 65536) return bad("max_batch_size", max_batch_size, "must be in [1, 65536]");
  if (max_source_length < 1 || max_source_length > config.max_positions)
    return Status::error(Errc::invalid_argument, "session option max_source_length = %d: must be in [1, %d] (the model's max_positions)", max_source_length, config.max_positions);
  if (max_target_length < 1 || max_target_length > config.max_positions)
    return Status::error(Errc::invalid_argument, "session option max_target_length = %d: must be in [1, %d] (the model's max_positions)", max_target_length, config.max_positions);
  if (max_beam_size < 1 || max_beam_size > 256) return bad("max_beam_size", max_beam_size, "must be in [1, 256]");
  if (max_beam_size >= config.target_vocab_size) return bad("max_beam_size", max_beam_size, "must be smaller than the target vocabulary");
  if (num_threads < 1 || num_threads > 256) return bad("num_threads", num_threads, "must be in [1, 256]");
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
    return bad("max_decoding_length", max_decoding_length, "must be in [0, %d] (0: the session's max_target_length)", session.max_target_length);
  if (min_decoding_length < 0 || min_decoding_length > session.max_target_length)
    return bad("min_decoding_length", min_decoding_length, "must be in [0, %d]", session.max_target_length);
  if (!std::isfinite(length_penalty) || length_penalty < 0.0f || length_penalty > 10.0f)
    return Status::error(Errc::invalid_argument, "translate option length_penalty = %g: must be in [0, 10]", double(length_penalty));
  if (!std::isfinite(max_length_ratio) || max_length_ratio < 0.0f || max_length_ratio > 1000.0f)
    return Status::error(Errc::invalid_argument, "translate option max_length_ratio = %g: must be in [0, 1000] (0: off)", double(max_length_ratio));
  if (max_length_offset < 0 || max_length_offset > session.max_target_length)
    return bad("max_length_offset", max_length_offset, "must be in [0, %d]", session.max_target_length);
  return {};
}

namespace detail {

SessionPlan SessionPlan::make(const ModelConfig& cfg, const SessionOptions& o) {
  SessionPlan p;
  p.B = o.max_batch_size;
  p.S = o.max_source_length;
  p.T = o.max_target_length;
  p.K = o.max_beam_size;
  p.R = p.B * p.K;
  p.N = p.B * p.S;
  p.threads = o.num_threads;
  p.scratch_stride = std::max(p.S, p.T);
  const size_t C = size_t(cfg.d_model), F = size_t(cfg.d_ff), V = size_t(cfg.target_vocab_size);
  const size_t L = size_t(cfg.decoder_layers), N = size_t(p.N), R = size_t(p.R), T = size_t(p.T),
               K = size_t(p.K), B = size_t(p.B);

  ArenaPlanner a;
  p.positions = a.reserve<float>(size_t(std::max(p.S, p.T)) * C);
  p.source_tokens = a.reserve<int32_t>(N);
  p.source_offsets = a.reserve<int>(B + 1);
  p.enc_x = a.reserve<float>(N * C);
  p.enc_y = a.reserve<float>(N * C);
  p.enc_qkv = a.reserve<float>(N * 3 * C);
  p.enc_attn = a.reserve<float>(N * C);
  p.enc_hidden = a.reserve<float>(N * F);
  p.cross_kv_stride = N * 2 * C;
  p.cross_kv = a.reserve<float>(L * p.cross_kv_stride);
  p.dec_x = a.reserve<float>(R * C);
  p.dec_y = a.reserve<float>(R * C);
  p.dec_qkv = a.reserve<float>(R * 3 * C);
  p.dec_q = a.reserve<float>(R * C);
  p.dec_attn = a.reserve<float>(R * C);
  p.dec_hidden = a.reserve<float>(R * F);
  p.logits = a.reserve<float>(R * V);
  p.self_cache_stride = R * T * 2 * C;
  p.self_cache = a.reserve<float>(L * p.self_cache_stride);
  p.reorder_scratch = a.reserve<float>(K * T * 2 * C);
  p.attention_scratch = a.reserve<float>(size_t(p.threads) * size_t(p.scratch_stride));
  p.step_tokens = a.reserve<int32_t>(R);
  p.beam_scores = a.reserve<float>(R);
  p.history = a.reserve<int32_t>(R * T);
  p.history_scratch = a.reserve<int32_t>(K * T);
  p.parents = a.reserve<int32_t>(R);
  p.candidates = a.reserve<Candidate>(K * 2 * K);
  p.finished = a.reserve<Finished>(B * K);
  p.finished_tokens = a.reserve<int32_t>(B * K * T);
  p.source_done = a.reserve<int>(B);
  p.length_limits = a.reserve<int>(B);
  p.hypotheses = a.reserve<Hypothesis>(B * K);
  p.hypothesis_counts = a.reserve<int>(B);
  p.total = a.size();
  return p;
}

}  // namespace detail

Expected<size_t> Session::required_memory(const ModelConfig& config, const SessionOptions& options) {
  MT_RETURN_IF_ERROR(options.validate(config));
  return SessionPlan::make(config, options).total;
}

namespace {

Expected<Session::Impl*> make_impl(std::shared_ptr<const Model>& model, const SessionOptions& options) {
  if (model == nullptr) return Status::error(Errc::invalid_argument, "session needs a model");
  MT_RETURN_IF_ERROR(options.validate(model->config()));
  auto* impl = new Session::Impl;
  impl->model = std::move(model);
  impl->options = options;
  impl->plan = SessionPlan::make(impl->model->config(), options);
  impl->kernels = &best_kernels();
  return impl;
}

}  // namespace

Expected<Session> Session::create(std::shared_ptr<const Model> model, const SessionOptions& options) {
  auto made = make_impl(model, options);
  if (!made) return made.status();
  std::unique_ptr<Impl> impl(made.value());
  auto* block = static_cast<std::byte*>(
      ::operator new(impl->plan.total, std::align_val_t(detail::kArenaAlignment), std::nothrow));
  if (block == nullptr) {
    return Status::error(Errc::out_of_memory, "cannot allocate %zu bytes of session memory",
                         impl->plan.total);
  }
  impl->owned = {block, [](std::byte* p) { ::operator delete(p, std::align_val_t(detail::kArenaAlignment)); }};
  impl->arena = block;
  return Session(std::move(impl));
}

Expected<Session> Session::create(std::shared_ptr<const Model> model, const SessionOptions& options,
                                  std::span<std::byte> buffer) {
  auto made = make_impl(model, options);
  if (!made) return made.status();
  std::unique_ptr<Impl> impl(made.value());
  if (buffer.size() < impl->plan.total) {
    return Status::error(Errc::invalid_argument, "session buffer of %zu bytes is smaller than the %zu needed",
                         buffer.size(), impl->plan.total);
  }
  if (reinterpret_cast<uintptr_t>(buffer.data()) % detail::kArenaAlignment != 0) {
    return Status::error(Errc::invalid_argument, "session buffer must be 64-byte aligned");
  }
  impl->arena = buffer.data();
  return Session(std::move(impl));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  Impl& s = *impl_;
  const ModelConfig& cfg = s.model->config();
  detail::fill_positions(s.at<float>(s.plan.positions), std::max(s.plan.S, s.plan.T), cfg.d_model);
  // Hypothesis holds spans: start their lifetimes in the arena.
  for (int i = 0; i < s.plan.B * s.plan.K; ++i) new (s.at<Hypothesis>(s.plan.hypotheses) + i) Hypothesis{};
  s.pool = std::make_unique<detail::ThreadPool>(s.options.num_threads);
  s.transformer.emplace(cfg, s.model->weights(), *s.kernels, *s.pool, s.at<float>(s.plan.positions),
                        s.at<float>(s.plan.attention_scratch), s.plan.scratch_stride);
}

Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

const Model& Session::model() const { return *impl_->model; }
const SessionOptions& Session::options() const { return impl_->options; }
size_t Session::memory_size() const { return impl_->plan.total; }
const char* Session::kernel_isa() const { return impl_->kernels->isa; }

detail::EncoderBuffers Session::Impl::encoder_buffers() {
  return {at<float>(plan.enc_x), at<float>(plan.enc_y), at<float>(plan.enc_qkv), at<float>(plan.enc_attn),
          at<float>(plan.enc_hidden)};
}

detail::DecoderBuffers Session::Impl::decoder_buffers() {
  return {at<float>(plan.dec_x), at<float>(plan.dec_y),    at<float>(plan.dec_qkv),
          at<float>(plan.dec_q), at<float>(plan.dec_attn), at<float>(plan.dec_hidden)};
}

detail::DecoderState Session::Impl::decoder_state(int rows_per_source) {
  return {at<float>(plan.self_cache), plan.self_cache_stride, plan.T, at<float>(plan.cross_kv),
          plan.cross_kv_stride, at<int>(plan.source_offsets), rows_per_source};
}

void Session::Impl::encode(int B) {
  const int* offsets = at<int>(plan.source_offsets);
  detail::EncoderBuffers buffers = encoder_buffers();
  transformer->encode(at<int32_t>(plan.source_tokens), offsets, B, buffers);
  transformer->project_memory(buffers.x, offsets[B], at<float>(plan.cross_kv), plan.cross_kv_stride);
}

Status Session::Impl::load_sources(std::span<const std::span<const int32_t>> sources,
                                   const TranslateOptions& options) {
  const ModelConfig& cfg = model->config();
  MT_RETURN_IF_ERROR(options.validate(this->options));
  if (sources.size() > size_t(plan.B)) {
    return Status::error(Errc::capacity_exceeded, "batch of %zu sentences exceeds the session's max_batch_size %d",
                         sources.size(), plan.B);
  }
  // Each source followed by EOS, back to back.
  int32_t* tokens = at<int32_t>(plan.source_tokens);
  int* offsets = at<int>(plan.source_offsets);
  int* limits = at<int>(plan.length_limits);
  offsets[0] = 0;
  for (size_t b = 0; b < sources.size(); ++b) {
    const std::span<const int32_t> src = sources[b];
    if (src.size() + 1 > size_t(plan.S)) {
      return Status::error(Errc::capacity_exceeded,
                           "sentence %zu has %zu tokens; the session allows %d (max_source_length %d, EOS included)",
                           b, src.size(), plan.S - 1, plan.S);
    }
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] < 0 || src[i] >= cfg.source_vocab_size) {
        return Status::error(Errc::invalid_argument, "sentence %zu token %zu has id %d, outside the vocabulary [0, %d)",
                             b, i, int(src[i]), cfg.source_vocab_size);
      }
    }
    int32_t* dst = tokens + offsets[b];
    std::copy(src.begin(), src.end(), dst);
    dst[src.size()] = cfg.eos_id;
    offsets[b + 1] = offsets[b] + int(src.size()) + 1;

    int limit = options.max_decoding_length > 0 ? options.max_decoding_length : plan.T;
    if (options.max_length_ratio > 0.0f) {
      const double by_ratio = std::ceil(double(options.max_length_ratio) * double(src.size())) + options.max_length_offset;
      limit = int(std::min(double(limit), by_ratio));
    }
    limits[b] = std::max(1, std::min(limit, plan.T));
  }
  return {};
}

Status Session::translate(std::span<const std::span<const int32_t>> sources,
                          const TranslateOptions& options, Translations* results) {
  Impl& s = *impl_;
  if (results == nullptr) return Status::error(Errc::invalid_argument, "results must not be null");
  *results = Translations{};
  MT_RETURN_IF_ERROR(s.load_sources(sources, options));
  const int B = int(sources.size());
  if (B == 0) return {};

  s.encode(B);
  const detail::SearchLimits search{options.beam_size, options.num_hypotheses, options.min_decoding_length,
                                    options.length_penalty};
  if (options.beam_size == 1) {
    s.greedy_search(B, search);
  } else {
    s.beam_search(B, search);
  }
  results->hypotheses_ = s.at<Hypothesis>(s.plan.hypotheses);
  results->counts_ = s.at<int>(s.plan.hypothesis_counts);
  results->stride_ = size_t(s.plan.K);
  results->sentences_ = size_t(B);
  return {};
}

}  // namespace mt
