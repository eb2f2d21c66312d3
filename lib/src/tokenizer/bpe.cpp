#include "tokenizer/bpe.hpp"

#include <algorithm>
#include <cstdint>

#include "tokenizer/utf8.hpp"

namespace mt::detail {
namespace {

struct Symbol {
  int32_t prev;  // -1: first
  int32_t next;  // -1: last
  uint32_t start;
  uint32_t length;  // 0 once merged into its left neighbour
  bool frozen;      // a user-defined symbol: never merged
};

// A candidate merge of symbols left and right into a piece of `size` bytes;
// stale once either side has changed (the sizes no longer add up).
struct Pair {
  int32_t left;
  int32_t right;
  float score;
  uint32_t size;
};

// Pops first: higher score, then smaller left.
bool lower_priority(const Pair& a, const Pair& b) {
  return a.score < b.score || (a.score == b.score && a.left > b.left);
}

// How an unused piece was proposed: its id, its left part's length, and
// when (proposals are numbered in order; the latest one counts).
struct UnusedMerge {
  int32_t id;
  uint32_t left_length;
  uint32_t order;
};

bool by_id_then_order(const UnusedMerge& a, const UnusedMerge& b) {
  return a.id < b.id || (a.id == b.id && a.order < b.order);
}

struct Segment {
  uint32_t start;
  uint32_t length;
};

// Upper bound of pairs ever proposed: n - 1 initial ones, two per merge.
size_t max_pairs(size_t n) { return 3 * n + 1; }

// Steps (merges popped, segments emitted, probes looking up how an unused
// piece was formed) allowed per normalized byte. The algorithm needs at most
// ~3 + 2 * (2 + log2(3n)), under 60 for any text a session accepts; past the
// budget encoding fails instead of running on, whatever the vocabulary.
constexpr size_t kMaxStepsPerByte = 128;

}  // namespace

BpeEncoder::BpeEncoder(const VocabularyView& vocabulary, const PieceTrie& trie, const PieceTrie& user_symbols)
    : trie_(&trie), user_symbols_(&user_symbols) {
  types_ = vocabulary.piece_types;
  scores_ = vocabulary.piece_scores;
  for (size_t id = 0; id < vocabulary.size(); ++id) {
    if (vocabulary.piece_type(id) == PieceType::unknown) unk_id_ = static_cast<int32_t>(id);
  }
}

size_t BpeEncoder::workspace_bytes(size_t n) {
  return scratch_bytes<Symbol>(n) + scratch_bytes<Pair>(max_pairs(n)) + scratch_bytes<UnusedMerge>(max_pairs(n)) +
         scratch_bytes<Segment>(n + 1);
}

int32_t BpeEncoder::piece_id(std::string_view text) const {
  const int32_t id = trie_->find(text);
  return id == PieceTrie::kNone ? unk_id_ : id;
}

Status BpeEncoder::encode(std::string_view normalized, Scratch& scratch, std::span<EncodedPiece> pieces,
                          size_t* count) const {
  const size_t n = normalized.size();
  Symbol* symbols = scratch.take<Symbol>(n);
  Pair* heap = scratch.take<Pair>(max_pairs(n));
  UnusedMerge* unused = scratch.take<UnusedMerge>(max_pairs(n));
  Segment* stack = scratch.take<Segment>(n + 1);
  if (symbols == nullptr || heap == nullptr || unused == nullptr || stack == nullptr || pieces.size() < n)
    return Status::error(Errc::capacity_exceeded, "bpe: workspace too small for %zu normalized bytes", n);
  size_t heap_size = 0, unused_count = 0;

  // Characters, or whole user-defined symbols.
  int32_t symbol_count = 0;
  for (size_t pos = 0; pos < n;) {
    const std::string_view rest = normalized.substr(pos);
    size_t length = user_symbols_->longest_prefix(rest);
    const bool frozen = length > 0;
    if (!frozen) length = std::min(utf8_char_length(static_cast<uint8_t>(rest[0])), rest.size());
    symbols[symbol_count] = {symbol_count - 1, pos + length < n ? symbol_count + 1 : -1, static_cast<uint32_t>(pos),
                             static_cast<uint32_t>(length), frozen};
    ++symbol_count;
    pos += length;
  }

  const auto propose = [&](int32_t left, int32_t right) {
    if (left == -1 || right == -1 || symbols[left].frozen || symbols[right].frozen) return;
    const uint32_t size = symbols[left].length + symbols[right].length;
    const int32_t id = trie_->find(normalized.substr(symbols[left].start, size));
    if (id == PieceTrie::kNone) return;
    const auto type = static_cast<PieceType>(types_[id]);
    if (type != PieceType::normal && type != PieceType::user_defined && type != PieceType::unused) return;
    heap[heap_size++] = {left, right, scores_[id], size};
    std::push_heap(heap, heap + heap_size, lower_priority);
    if (type == PieceType::unused) {
      unused[unused_count] = {id, symbols[left].length, uint32_t(unused_count)};
      ++unused_count;
    }
  };

  for (int32_t i = 1; i < symbol_count; ++i) propose(i - 1, i);

  size_t steps = 0;
  const size_t max_steps = kMaxStepsPerByte * (n + 8);
  while (heap_size > 0) {
    ++steps;
    std::pop_heap(heap, heap + heap_size, lower_priority);
    const Pair top = heap[--heap_size];
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != top.size) continue;
    left.length += right.length;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    right.length = 0;
    propose(left.prev, top.left);
    propose(top.left, left.next);
  }

  // Emit, splitting unused pieces back into the pair that last proposed them.
  // Sorted by id, the latest proposal of a piece is found by binary search:
  // a scan per segment made crafted vocabularies (many unused pieces)
  // quadratic in the text's length.
  std::sort(unused, unused + unused_count, by_id_then_order);
  const auto latest_merge = [&](int32_t id) -> const UnusedMerge* {
    const auto probe = [&](const UnusedMerge& a, const UnusedMerge& b) { return ++steps, by_id_then_order(a, b); };
    const UnusedMerge* end = std::upper_bound(unused, unused + unused_count, UnusedMerge{id, 0, UINT32_MAX}, probe);
    return end != unused && end[-1].id == id ? end - 1 : nullptr;
  };
  size_t out = 0;
  for (int32_t index = symbol_count > 0 ? 0 : -1; index != -1; index = symbols[index].next) {
    size_t depth = 0;
    stack[depth++] = {symbols[index].start, symbols[index].length};
    while (depth > 0) {
      const Segment s = stack[--depth];
      if (++steps > max_steps) {
        return Status::error(Errc::capacity_exceeded, "bpe: more than %zu steps for %zu bytes", max_steps, n);
      }
      const int32_t id = piece_id(normalized.substr(s.start, s.length));
      const UnusedMerge* merge = static_cast<PieceType>(types_[id]) == PieceType::unused ? latest_merge(id) : nullptr;
      if (merge == nullptr || merge->left_length == 0 || merge->left_length >= s.length) {
        if (out == pieces.size()) return Status::error(Errc::internal, "bpe: more pieces than bytes");
        pieces[out++] = {s.start, s.length, id};
        continue;
      }
      if (depth + 2 > n + 1) return Status::error(Errc::internal, "bpe: resegmentation too deep");
      stack[depth++] = {s.start + merge->left_length, s.length - merge->left_length};  // right, popped second
      stack[depth++] = {s.start, merge->left_length};
    }
  }
  *count = out;
  return {};
}

}  // namespace mt::detail
