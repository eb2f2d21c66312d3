// SentencePiece 0.1.97's normalizer (normalizer.cc), without allocation:
// 1. user-defined symbols pass through untouched (longest match first);
// 2. otherwise the longest rule of the precompiled charsmap applies (e.g.
//    nmt_nfkc's NFKC tables); otherwise one character is copied, or, if it is
//    malformed UTF-8, one byte becomes U+FFFD;
// 3. whitespace: leading/trailing/repeated spaces dropped
//    (remove_extra_whitespaces), a space added before (add_dummy_prefix) or
//    after (treat_whitespace_as_suffix), spaces written as U+2581
//    (escape_whitespaces).
//
// The charsmap blob: a little-endian uint32 trie size T, T bytes of a
// Darts-clone double array (uint32 units), then NUL-terminated replacement
// strings that leaf values index. The blob comes from a model file, so it is
// checked once at create() (every reachable leaf and string in range) and
// every access is still bounds-checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mt/status.hpp"
#include "mt/vocabulary.hpp"
#include "tokenizer/piece_trie.hpp"

namespace mt::detail {

struct VocabularyView;

// Checks a precompiled charsmap (see above). On success, `max_expansion` (if
// not null) receives the most bytes one input byte can become under its rules.
Status check_charsmap(std::span<const uint8_t> blob, size_t* max_expansion);
// The blob's layout only (sizes consistent): cheap, no walk of the trie.
Status check_charsmap_layout(std::span<const uint8_t> blob);

// Every rule of a charsmap as (input bytes, replacement bytes), keys in
// byte order: what SentencePiece's rule TSV would list, for building a
// variant of a built-in normalization (vocabulary training). An error for
// a malformed blob or a key longer than 64 bytes (a loop in the trie).
Status charsmap_rules(std::span<const uint8_t> blob, std::vector<std::pair<std::string, std::string>>* rules);

class Normalizer {
 public:
  // `vocabulary` and `user_symbols` (a trie of the user-defined pieces) must
  // outlive the normalizer.
  static Expected<Normalizer> create(const VocabularyView& vocabulary, const PieceTrie* user_symbols);

  // The most bytes normalize() writes for an input of `input_bytes` bytes.
  size_t max_output_bytes(size_t input_bytes) const;

  // Writes the normalized form of `input` to `out` (*length bytes).
  Status normalize(std::string_view input, std::span<char> out, size_t* length) const;

 private:
  Normalizer() = default;
  // The replacement for the start of `input` and how many bytes it consumes.
  std::pair<std::string_view, size_t> normalize_prefix(std::string_view input) const;
  // Longest charsmap rule matching the start of `input`: its length (0 if
  // none) and its replacement.
  size_t match_rule(std::string_view input, std::string_view* replacement) const;
  uint32_t unit(size_t index) const;

  const uint8_t* units_ = nullptr;  // little-endian uint32 Darts units
  size_t unit_count_ = 0;
  const char* strings_ = nullptr;  // NUL-terminated replacements
  size_t strings_size_ = 0;
  size_t max_expansion_ = 3;  // a space or a malformed byte: 1 byte -> 3
  const PieceTrie* user_symbols_ = nullptr;
  bool add_dummy_prefix_ = true;
  bool remove_extra_whitespaces_ = true;
  bool escape_whitespaces_ = true;
  bool treat_whitespace_as_suffix_ = false;
};

}  // namespace mt::detail
