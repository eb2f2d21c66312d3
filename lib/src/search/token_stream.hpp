// TranslateOptions::on_token for one search: which tokens of each sentence
// are final, their log-probabilities and their text, given in order.
// Greedy search gives each token as it is chosen; beam search the prefix
// every hypothesis that can still win shares, then the rest of the best one
// when the sentence ends. Works in the session's arena (no allocation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "mt/session.hpp"
#include "search/search_bookkeeping.hpp"

namespace mt::detail {

class Tokenizer;

struct StreamBuffers {
  int* streamed_tokens = nullptr;    // [B]: tokens given so far
  size_t* streamed_bytes = nullptr;  // [B]: bytes of text given so far
  char* text = nullptr;              // decode scratch, text_bytes bytes (null: no text)
  size_t text_bytes = 0;
};

class TokenStream {
 public:
  // `first` and `stride` map a sentence of this search to the call's index;
  // `target` decodes the text (null: events carry no text).
  TokenStream(TokenCallback callback, const StreamBuffers& buffers, const Tokenizer* target, int32_t eos_id,
              size_t first, size_t stride, std::mutex* serial);
  bool active() const { return bool(callback_); }
  void start(int B);
  int streamed(int b) const { return buffers_.streamed_tokens[b]; }

  // Gives tokens [streamed(b), count) of sentence b: `tokens` and
  // `log_probs`, each one's log-probability. With `ended`, the sentence
  // ends with them: the text is flushed and, with `eos`, an EOS event
  // follows (its log-probability at log_probs[count]).
  // Returns true when the callback asked to stop (at the token it was given).
  bool give(int b, const int32_t* tokens, int count, const float* log_probs, bool ended, bool eos);

 private:
  bool call(const TokenEvent& event);
  // Text of tokens[0, count) in whole characters, line breaks as spaces;
  // with `flush`, incomplete trailing byte pieces too. Returns its length.
  size_t text_of(const int32_t* tokens, int count, bool flush);

  TokenCallback callback_;
  StreamBuffers buffers_;
  const Tokenizer* target_;
  int32_t eos_id_;
  size_t first_, stride_;
  std::mutex* serial_;
};

}  // namespace mt::detail
