// A parallel corpus for training: two aligned text files tokenized with the
// model's own tokenizer (libmt's, identical to SentencePiece), filtered by
// length, then cut into token-based batches of similar lengths.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mt/model.hpp"
#include "mt/status.hpp"
#include "mt/vocabulary.hpp"

namespace mt::train {

struct SentencePair {
  std::vector<int32_t> source;  // ids without BOS/EOS
  std::vector<int32_t> target;
  uint32_t line = 0;  // 1-based line in the files
};

struct CorpusFilter {
  int max_tokens = 100;    // per side, after tokenization, without BOS/EOS
  float max_ratio = 0.0f;  // > 0: drop pairs whose length ratio exceeds it (either way)
  bool drop_empty = true;  // pairs with an empty side
};

struct CorpusStats {
  size_t lines = 0, kept = 0, dropped_long = 0, dropped_ratio = 0, dropped_empty = 0;
  size_t source_tokens = 0, target_tokens = 0;
};

// Reads and tokenizes `source_path` / `target_path` (same number of lines,
// else an error naming both counts), keeping the pairs the filter accepts.
Expected<std::vector<SentencePair>> read_parallel_corpus(const std::string& source_path, const std::string& target_path,
                                                         const VocabularyData& vocabulary, const CorpusFilter& filter,
                                                         CorpusStats* stats);

// The same through a model file's own tokenizers (fine-tuning): sources as
// Model::encode, targets as Model::encode_target (its target vocabulary when
// it has one), each side after its language prefix (mt::language_prefixes:
// a multilingual model's tokens), which the length filter counts.
Expected<std::vector<SentencePair>> read_parallel_corpus(const std::string& source_path, const std::string& target_path,
                                                         const Model& model, std::span<const int32_t> source_prefix,
                                                         std::span<const int32_t> target_prefix,
                                                         const CorpusFilter& filter, CorpusStats* stats);

// One batch, padded: B sentences, S source and T target positions.
struct Batch {
  int B = 0, S = 0, T = 0;
  std::vector<int32_t> source;          // [B, S]: ids + EOS (unless !source_eos), then pad
  std::vector<int32_t> source_lengths;  // [B], EOS included
  std::vector<int32_t> target_input;    // [B, T]: BOS + ids, then pad (teacher forcing)
  std::vector<int32_t> target_output;   // [B, T]: ids + EOS, then pad (the labels)
  std::vector<int32_t> target_lengths;  // [B], EOS included
  int target_tokens = 0;                // non-pad labels
  std::vector<uint32_t> pairs;          // indices into the corpus
};

struct BatchingOptions {
  int max_tokens = 4096;  // per batch: B x max(S, T) padded positions at most
  int max_sentences = 0;  // per batch; 0: no limit
};

struct SpecialIds {
  int32_t pad = 0, bos = 1, eos = 2;  // bos: the decoder's first input (ModelConfig::start_id)
  bool source_eos = true;             // eos ends each source (ModelConfig::source_eos)
};

// Groups pairs of similar lengths (sorted by target then source length, ties
// broken by a seeded shuffle) into batches within the token budget. Every
// pair lands in exactly one batch. The batch order is shuffled with `seed`:
// same corpus, options and seed, same batches in the same order.
std::vector<std::vector<uint32_t>> make_batches(const std::vector<SentencePair>& corpus, const BatchingOptions& options,
                                                uint64_t seed);

// Pads one batch of pair indices into model inputs and labels.
Batch assemble_batch(const std::vector<SentencePair>& corpus, const std::vector<uint32_t>& pairs,
                     const SpecialIds& ids);

}  // namespace mt::train
