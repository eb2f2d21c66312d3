// What libmt's own code (lib/src, the tests, quantize/, the bindings, the
// benchmarks) reaches inside a Model or a Session. Not installed: users see
// only the public API.
#pragma once

#include "mt/model.hpp"
#include "mt/session.hpp"

namespace mt::detail {

class LinearObserver;

struct Access {
  static const ModelWeights& weights(const Model& m) { return m.weights(); }
  static const Tokenizer* tokenizer(const Model& m) { return m.tokenizer(); }
  static const Tokenizer* target_tokenizer(const Model& m) { return m.target_tokenizer(); }
  static CudaWeightCache& cuda_weights(const Model& m) { return m.cuda_weights(); }
  static uint64_t content_fingerprint(const Model& m) { return m.content_fingerprint(); }
  static const NonBreakingPrefixes& sentence_prefixes(const Model& m) { return m.sentence_prefixes(); }
  static const Status& sentence_prefixes_status(const Model& m) { return m.sentence_prefixes_status(); }
  static Session::Impl* impl(Session& s) { return s.impl_.get(); }
  static Session::Impl* impl(Session&& s) { return s.impl_.get(); }  // within one expression
};

inline const ModelWeights& weights_of(const Model& m) { return Access::weights(m); }
inline const Tokenizer* tokenizer_of(const Model& m) { return Access::tokenizer(m); }
inline const Tokenizer* target_tokenizer_of(const Model& m) { return Access::target_tokenizer(m); }
inline CudaWeightCache& cuda_weights_of(const Model& m) { return Access::cuda_weights(m); }
inline Session::Impl* impl_of(Session& s) { return Access::impl(s); }
// Decoder steps a session has run (tests: a cached sentence costs none).
uint64_t decoder_steps(Session& s);
inline Session::Impl* impl_of(Session&& s) { return Access::impl(std::move(s)); }

// The calibration hook: every linear layer's input of a CPU session, split by
// layers, goes to `observer` (null: none). mt_quantize calibrates through it.
Status set_linear_observer(Session& session, LinearObserver* observer);

}  // namespace mt::detail
