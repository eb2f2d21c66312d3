// Repetition guards on one row of a decoder step, for small models that
// loop ("salad salad salad"): TranslateOptions::repetition_penalty and
// no_repeat_ngram_size. `history` is the row's hypothesis so far, `length`
// tokens; `vocabulary` maps its ids to the row's columns (ids the row does
// not cover are left alone). Nothing is allocated.
#pragma once

#include <cstdint>

#include "search/row_vocabulary.hpp"

namespace mt::detail {

// CTRL's penalty (Keskar et al. 2019), on the raw logits before the
// log-softmax: each distinct token of the history has its logit divided by
// `penalty` when positive, multiplied when negative.
void penalize_repeats(float* logits, const RowVocabulary& vocabulary, const int32_t* history, int length,
                      float penalty);

// After the log-softmax: every token that would complete an n-gram the
// history already holds gets -inf (n = 1: every token it holds).
void ban_repeated_ngrams(float* log_probs, const RowVocabulary& vocabulary, const int32_t* history, int length, int n);

}  // namespace mt::detail
