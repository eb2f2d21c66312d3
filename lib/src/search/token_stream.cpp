#include "search/token_stream.hpp"

#include <algorithm>
#include <cmath>

#include "mt/vocabulary.hpp"
#include "tokenizer/line_breaks.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocabulary_view.hpp"

namespace mt::detail {

TokenStream::TokenStream(TokenCallback callback, const StreamBuffers& buffers, const Tokenizer* target, int32_t eos_id,
                         size_t first, size_t stride, std::mutex* serial)
    : callback_(callback),
      buffers_(buffers),
      target_(target),
      eos_id_(eos_id),
      first_(first),
      stride_(stride),
      serial_(serial) {}

void TokenStream::start(int B) {
  if (!active()) return;
  std::fill_n(buffers_.streamed_tokens, B, 0);
  std::fill_n(buffers_.streamed_bytes, B, size_t(0));
}

bool TokenStream::call(const TokenEvent& event) {
  std::lock_guard<std::mutex> lock(*serial_);
  return callback_.function(callback_.user_data, event);
}

size_t TokenStream::text_of(const int32_t* tokens, int count, bool flush) {
  if (target_ == nullptr || buffers_.text == nullptr) return 0;
  // Byte pieces at the end may be part of a character still to come: left
  // out until it is complete (or the sentence ends).
  int whole = count;
  if (!flush) {
    const VocabularyView& v = target_->vocabulary();
    while (whole > 0 && v.piece_type(size_t(tokens[whole - 1])) == PieceType::byte) --whole;
  }
  size_t length = 0;
  if (!target_->decode({tokens, size_t(whole)}, {buffers_.text, buffers_.text_bytes}, &length).ok()) return 0;
  return replace_line_breaks(buffers_.text, length);
}

bool TokenStream::give(int b, const int32_t* tokens, int count, const float* log_probs, bool ended, bool eos) {
  int& given = buffers_.streamed_tokens[b];
  size_t& bytes = buffers_.streamed_bytes[b];
  const size_t sentence = first_ + size_t(b) * stride_;
  for (int p = given; p < count; ++p) {
    const bool last = ended && p + 1 == count && !eos;
    const size_t length = text_of(tokens, p + 1, last);
    const size_t from = std::min(bytes, length);
    const TokenEvent event{sentence, p, tokens[p], {buffers_.text + from, length - from}, log_probs[p]};
    bytes = std::max(bytes, length);
    given = p + 1;
    if (call(event) && !ended) return true;
  }
  if (ended && eos) {
    const size_t length = text_of(tokens, count, true);
    const size_t from = std::min(bytes, length);
    const TokenEvent event{sentence, count, eos_id_, {buffers_.text + from, length - from}, log_probs[count]};
    bytes = std::max(bytes, length);
    call(event);
  }
  return false;
}

}  // namespace mt::detail
