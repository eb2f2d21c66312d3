#include "tokenizer/normalizer.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "tokenizer/utf8.hpp"
#include "tokenizer/vocabulary_view.hpp"

namespace mt::detail {
namespace {

// A Darts-clone unit (darts.h, DoubleArrayUnit): bits 0-7 label, bit 8
// "has a leaf child", bit 9 "offset scaled by 256", bits 10-31 offset; a leaf
// unit holds a 31-bit value with bit 31 set, so its label never equals a byte.
bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t unit_value(uint32_t u) { return u & 0x7FFFFFFFu; }
uint32_t unit_label(uint32_t u) { return u & 0x800000FFu; }
uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

uint32_t read_le32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

struct CharsmapView {
  const uint8_t* units = nullptr;
  size_t unit_count = 0;
  const char* strings = nullptr;
  size_t strings_size = 0;
};

Status split_charsmap(std::span<const uint8_t> blob, CharsmapView* view) {
  if (blob.size() <= 4)
    return Status::error(Errc::corrupt_model, "normalizer charsmap: blob of %zu bytes is too short", blob.size());
  const uint32_t trie_size = read_le32(blob.data());
  if (trie_size >= blob.size() || blob.size() - 4 < trie_size)
    return Status::error(Errc::corrupt_model, "normalizer charsmap: trie size %u exceeds the blob (%zu bytes)",
                         trie_size, blob.size());
  if (trie_size < 4) return Status::error(Errc::corrupt_model, "normalizer charsmap: empty trie");
  view->units = blob.data() + 4;
  view->unit_count = trie_size / 4;  // as SentencePiece: a partial unit is ignored
  view->strings = reinterpret_cast<const char*>(blob.data() + 4 + trie_size);
  view->strings_size = blob.size() - 4 - trie_size;
  return {};
}

// The replacement string of the leaf unit at `leaf`, checked in range and terminated.
Status leaf_replacement(const CharsmapView& v, size_t leaf, std::string_view* out) {
  if (leaf >= v.unit_count)
    return Status::error(Errc::corrupt_model, "normalizer charsmap: leaf unit %zu out of range", leaf);
  const uint32_t value = unit_value(read_le32(v.units + 4 * leaf));
  if (value >= v.strings_size)
    return Status::error(Errc::corrupt_model, "normalizer charsmap: replacement offset %u out of range", value);
  const char* s = v.strings + value;
  const void* nul = std::memchr(s, 0, v.strings_size - value);
  if (nul == nullptr)
    return Status::error(Errc::corrupt_model, "normalizer charsmap: replacement at %u is not terminated", value);
  *out = std::string_view(s, size_t(static_cast<const char*>(nul) - s));
  return {};
}

}  // namespace

Status check_charsmap_layout(std::span<const uint8_t> blob) {
  CharsmapView v;
  return split_charsmap(blob, &v);
}

Status check_charsmap(std::span<const uint8_t> blob, size_t* max_expansion) {
  CharsmapView v;
  MT_RETURN_IF_ERROR(split_charsmap(blob, &v));
  const auto unit = [&](size_t i) { return read_le32(v.units + 4 * i); };

  // Visits every node the double array can reach, as commonPrefixSearch
  // would: from node u, label c leads to base ^ c where base = u ^ offset(u).
  // Darts-clone shares common suffixes, so nodes are reached by several
  // paths: breadth first gives each its shortest key, which bounds the
  // expansion of every rule ending there.
  size_t expansion = 3;
  std::vector<uint8_t> seen(v.unit_count, 0);
  struct Entry {
    size_t unit;
    size_t depth;
  };
  std::vector<Entry> queue{{0, 0}};
  seen[0] = 1;
  for (size_t next = 0; next < queue.size(); ++next) {
    const Entry e = queue[next];
    const uint32_t u = unit(e.unit);
    const size_t base = e.unit ^ unit_offset(u);
    if (e.depth > 0 && unit_has_leaf(u)) {
      std::string_view s;
      MT_RETURN_IF_ERROR(leaf_replacement(v, base, &s));
      size_t out = s.size();
      for (const char c : s) out += c == ' ' ? 2 : 0;  // a space may become U+2581
      expansion = std::max(expansion, (out + e.depth - 1) / e.depth);
    }
    for (uint32_t c = 0; c < 256; ++c) {
      const size_t child = base ^ c;
      if (child >= v.unit_count || seen[child] || unit_label(unit(child)) != c) continue;
      seen[child] = 1;
      queue.push_back({child, e.depth + 1});
    }
  }
  if (expansion > VocabularyData::kMaxNormalizedExpansion)
    return Status::error(Errc::invalid_model, "normalizer charsmap: a rule turns a byte into %zu bytes (at most %u)",
                         expansion, VocabularyData::kMaxNormalizedExpansion);
  if (max_expansion != nullptr) *max_expansion = expansion;
  return {};
}

Status charsmap_rules(std::span<const uint8_t> blob, std::vector<std::pair<std::string, std::string>>* rules) {
  CharsmapView v;
  MT_RETURN_IF_ERROR(split_charsmap(blob, &v));
  const auto unit = [&](size_t i) { return read_le32(v.units + 4 * i); };
  // Depth first over paths, not nodes: Darts-clone shares suffixes, so one
  // node ends several keys. Children in label order give keys in byte order.
  constexpr size_t kMaxKey = 64;
  struct Frame {
    size_t unit;
    std::string key;
  };
  std::vector<Frame> stack{{0, {}}};
  rules->clear();
  while (!stack.empty()) {
    Frame f = std::move(stack.back());
    stack.pop_back();
    const uint32_t u = unit(f.unit);
    const size_t base = f.unit ^ unit_offset(u);
    if (!f.key.empty() && unit_has_leaf(u)) {
      std::string_view s;
      MT_RETURN_IF_ERROR(leaf_replacement(v, base, &s));
      rules->emplace_back(f.key, std::string(s));
    }
    if (f.key.size() == kMaxKey)
      return Status::error(Errc::corrupt_model, "normalizer charsmap: a key longer than %zu bytes (a loop)", kMaxKey);
    for (uint32_t c = 256; c-- > 1;) {  // pushed in reverse: popped in label order; label 0 is the leaf
      const size_t child = base ^ c;
      if (child >= v.unit_count || unit_label(unit(child)) != c) continue;
      stack.push_back({child, f.key + char(c)});
    }
  }
  return {};
}

Expected<Normalizer> Normalizer::create(const VocabularyView& vocabulary, const PieceTrie* user_symbols) {
  Normalizer n;
  if (!vocabulary.precompiled_charsmap.empty()) {
    if (vocabulary.normalized_expansion == 0) {
      MT_RETURN_IF_ERROR(check_charsmap(vocabulary.precompiled_charsmap, &n.max_expansion_));
    } else {
      n.max_expansion_ = std::max<size_t>(3, vocabulary.normalized_expansion);
    }
    CharsmapView v;
    MT_RETURN_IF_ERROR(split_charsmap(vocabulary.precompiled_charsmap, &v));
    n.units_ = v.units;
    n.unit_count_ = v.unit_count;
    n.strings_ = v.strings;
    n.strings_size_ = v.strings_size;
  }
  n.user_symbols_ = user_symbols != nullptr && !user_symbols->empty() ? user_symbols : nullptr;
  n.add_dummy_prefix_ = vocabulary.add_dummy_prefix;
  n.remove_extra_whitespaces_ = vocabulary.remove_extra_whitespaces;
  n.escape_whitespaces_ = vocabulary.escape_whitespaces;
  n.treat_whitespace_as_suffix_ = vocabulary.treat_whitespace_as_suffix;
  return n;
}

size_t Normalizer::max_output_bytes(size_t input_bytes) const {
  const size_t most = std::numeric_limits<size_t>::max();
  if (input_bytes > (most - kSpaceSymbol.size()) / max_expansion_) return most;
  return input_bytes * max_expansion_ + kSpaceSymbol.size();  // + the dummy prefix or suffix
}

uint32_t Normalizer::unit(size_t index) const { return read_le32(units_ + 4 * index); }

size_t Normalizer::match_rule(std::string_view input, std::string_view* replacement) const {
  // Darts commonPrefixSearch, keeping the longest hit; out-of-range units
  // end the walk (create() proved none is reachable).
  size_t longest = 0;
  size_t pos = unit_offset(unit(0));
  for (size_t i = 0; i < input.size(); ++i) {
    const auto c = static_cast<uint8_t>(input[i]);
    pos ^= c;
    if (pos >= unit_count_) break;
    const uint32_t u = unit(pos);
    if (unit_label(u) != c) break;
    pos ^= unit_offset(u);
    if (unit_has_leaf(u)) {
      if (pos >= unit_count_) break;
      const uint32_t value = unit_value(unit(pos));
      if (value >= strings_size_) break;
      const char* s = strings_ + value;
      const void* nul = std::memchr(s, 0, strings_size_ - value);
      const size_t length = nul ? static_cast<const char*>(nul) - s : strings_size_ - value;
      *replacement = std::string_view(s, length);
      longest = i + 1;
    }
  }
  return longest;
}

std::pair<std::string_view, size_t> Normalizer::normalize_prefix(std::string_view input) const {
  if (user_symbols_ != nullptr) {
    const size_t length = user_symbols_->longest_prefix(input);
    if (length > 0) return {input.substr(0, length), length};
  }
  if (units_ != nullptr) {
    std::string_view replacement;
    const size_t length = match_rule(input, &replacement);
    if (length > 0) return {replacement, length};
  }
  size_t length = 0;
  if (!utf8_decode_valid(input, &length)) return {kReplacementChar, 1};
  return {input.substr(0, length), length};
}

Status Normalizer::normalize(std::string_view input, std::span<char> out, size_t* length) const {
  size_t n = 0;
  const auto overflow = [&] {
    return Status::error(Errc::capacity_exceeded, "normalizer: output of %zu bytes is too small for %zu input bytes",
                         out.size(), input.size());
  };
  const auto put = [&](std::string_view s) {
    if (s.size() > out.size() - n) return false;
    std::memcpy(out.data() + n, s.data(), s.size());
    n += s.size();
    return true;
  };
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : std::string_view(" ");
  *length = 0;

  if (remove_extra_whitespaces_) {  // leading spaces
    while (!input.empty()) {
      const auto [piece, consumed] = normalize_prefix(input);
      if (piece != " ") break;
      input.remove_prefix(consumed);
    }
  }
  if (input.empty()) return {};

  if (!treat_whitespace_as_suffix_ && add_dummy_prefix_ && !put(space)) return overflow();

  bool is_prev_space = remove_extra_whitespaces_;
  while (!input.empty()) {
    auto [piece, consumed] = normalize_prefix(input);
    while (is_prev_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    if (!piece.empty()) {
      for (const char c : piece) {
        if (!put(c == ' ' ? space : std::string_view(&c, 1))) return overflow();
      }
      is_prev_space = piece.back() == ' ';
    }
    input.remove_prefix(consumed);
    if (!remove_extra_whitespaces_) is_prev_space = false;
  }

  if (remove_extra_whitespaces_) {  // trailing spaces, whatever produced them
    while (n >= space.size() && std::string_view(out.data() + n - space.size(), space.size()) == space)
      n -= space.size();
  }
  if (treat_whitespace_as_suffix_ && add_dummy_prefix_ && !put(space)) return overflow();
  *length = n;
  return {};
}

}  // namespace mt::detail
