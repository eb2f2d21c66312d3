#include "search/repetition_guards.hpp"

#include <limits>

namespace mt::detail {

void penalize_repeats(float* logits, const RowVocabulary& vocabulary, const int32_t* history, int length,
                      float penalty) {
  for (int i = 0; i < length; ++i) {
    const int32_t token = history[i];
    bool seen = false;  // once per distinct token: histories are short, no set needed
    for (int j = 0; j < i && !seen; ++j) seen = history[j] == token;
    const int column = seen ? -1 : vocabulary.column(token);
    if (column < 0) continue;
    float& x = logits[column];
    x = x < 0.0f ? x * penalty : x / penalty;
  }
}

void ban_repeated_ngrams(float* log_probs, const RowVocabulary& vocabulary, const int32_t* history, int length,
                         int n) {
  if (n <= 0 || length < n - 1) return;
  // The n-gram that would end at the next token starts with the last n - 1 tokens.
  const int32_t* tail = history + length - (n - 1);
  for (int start = 0; start + n - 1 < length; ++start) {
    bool same = true;
    for (int j = 0; j < n - 1 && same; ++j) same = history[start + j] == tail[j];
    const int column = same ? vocabulary.column(history[start + n - 1]) : -1;
    if (column >= 0) log_probs[column] = -std::numeric_limits<float>::infinity();
  }
}

}  // namespace mt::detail
