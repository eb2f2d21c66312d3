#include "tokenizer/tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/bpe.hpp"
#include "tokenizer/language_codes.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/piece_trie.hpp"
#include "tokenizer/scratch.hpp"
#include "tokenizer/unigram.hpp"
#include "tokenizer/utf8.hpp"

namespace mt::detail {

struct Tokenizer::Impl {
  std::unique_ptr<const FlatVocabulary> owned;  // when made from a VocabularyData
  VocabularyView vocabulary;                    // the members below point into what it points at
  PieceTrie pieces;                             // every piece, value = id
  PieceTrie user_symbols;                       // user-defined pieces only
  std::optional<Normalizer> normalizer;
  std::optional<UnigramEncoder> unigram;
  std::optional<BpeEncoder> bpe;
  std::vector<uint8_t> byte_values;  // per id: the byte a byte piece stands for
  int32_t byte_ids[256] = {};
  int32_t unknown_piece = -1;  // the unknown piece's index
  size_t max_piece_bytes = 0;  // the most bytes one id decodes to
};

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Expected<std::unique_ptr<const Tokenizer>> Tokenizer::create(VocabularyData vocabulary) {
  auto flat = std::make_unique<const FlatVocabulary>(std::move(vocabulary));
  auto tokenizer = create(flat->view(), nullptr);
  if (tokenizer) tokenizer.value()->impl_->owned = std::move(flat);
  return tokenizer;
}

Expected<std::unique_ptr<const Tokenizer>> Tokenizer::create(const VocabularyView& vocabulary,
                                                             const PieceTrie::Stored* trie) {
  MT_RETURN_IF_ERROR(vocabulary.validate());
  auto impl = std::make_unique<Impl>();
  impl->vocabulary = vocabulary;
  const VocabularyView& v = impl->vocabulary;

  auto pieces = trie == nullptr ? piece_trie_of(v, /*user_defined_only=*/false)
                                : PieceTrie::from_stored(*trie, v.piece_text, v.piece_ends);
  if (!pieces) return pieces.status();
  impl->pieces = std::move(pieces.value());
  auto user_symbols = piece_trie_of(v, /*user_defined_only=*/true);
  if (!user_symbols) return user_symbols.status();
  impl->user_symbols = std::move(user_symbols.value());

  impl->byte_values.assign(v.size(), 0);
  impl->max_piece_bytes = std::max<size_t>(v.unk_surface.size(), kReplacementChar.size());
  for (size_t id = 0; id < v.size(); ++id) {
    const std::string_view text = v.piece(id);
    int value = 0;
    if (v.piece_type(id) == PieceType::byte && is_byte_piece(text, &value)) {  // always true: validate() checked
      impl->byte_ids[value] = static_cast<int32_t>(id);
      impl->byte_values[id] = static_cast<uint8_t>(value);
    }
    impl->max_piece_bytes = std::max(impl->max_piece_bytes, text.size());
    if (v.piece_type(id) == PieceType::unknown) impl->unknown_piece = static_cast<int32_t>(id);
  }

  auto normalizer = Normalizer::create(v, &impl->user_symbols);
  if (!normalizer) return normalizer.status();
  impl->normalizer.emplace(std::move(normalizer.value()));
  if (v.type == VocabularyType::unigram) {
    impl->unigram.emplace(v, impl->pieces);
  } else {
    impl->bpe.emplace(v, impl->pieces, impl->user_symbols);
  }
  return std::unique_ptr<const Tokenizer>(new Tokenizer(std::move(impl)));
}

const VocabularyView& Tokenizer::vocabulary() const { return impl_->vocabulary; }
int Tokenizer::size() const { return static_cast<int>(impl_->vocabulary.size()); }

namespace {

// Normalized text longer than this cannot be indexed by the encoders' int32 positions.
constexpr size_t kMaxNormalizedBytes = std::numeric_limits<int32_t>::max() / 4;

}  // namespace

size_t Tokenizer::encode_workspace_bytes(size_t max_input_bytes) const {
  const size_t n = max_encoded_ids(max_input_bytes);
  if (n > kMaxNormalizedBytes) return std::numeric_limits<size_t>::max();  // encode() refuses such input
  const size_t model = impl_->unigram
                           ? std::max(UnigramEncoder::workspace_bytes(n), UnigramEncoder::sample_workspace_bytes(n))
                           : BpeEncoder::workspace_bytes(n);
  const size_t stripped = impl_->vocabulary.language_codes ? scratch_bytes<char>(max_input_bytes) : 0;
  return stripped + scratch_bytes<char>(n) + scratch_bytes<EncodedPiece>(n) + model;
}

size_t Tokenizer::max_encoded_ids(size_t max_input_bytes) const {
  // Every id covers at least one byte of the normalized text (unknown runs
  // spelt as bytes: exactly one), so normalized bytes bound the ids; plus
  // the language code's.
  return impl_->normalizer->max_output_bytes(max_input_bytes) + (impl_->vocabulary.language_codes ? 1 : 0);
}

size_t Tokenizer::max_decoded_bytes(size_t ids) const { return ids * impl_->max_piece_bytes; }

Status Tokenizer::encode(std::string_view text, std::span<std::byte> workspace, std::span<int32_t> ids,
                         size_t* count) const {
  return encode_with(text, nullptr, workspace, ids, count);
}

bool Tokenizer::can_sample() const { return impl_->unigram.has_value(); }

Status Tokenizer::encode_sampled(std::string_view text, double alpha, uint64_t seed, std::span<std::byte> workspace,
                                 std::span<int32_t> ids, size_t* count) const {
  *count = 0;
  if (!can_sample())
    return Status::error(Errc::invalid_argument, "tokenizer: sampled segmentations need a unigram vocabulary, not BPE");
  if (!(alpha > 0.0 && alpha <= UnigramEncoder::kMaxSamplingAlpha))
    return Status::error(Errc::invalid_argument, "tokenizer: sampling needs an alpha in (0, %g], got %g",
                         UnigramEncoder::kMaxSamplingAlpha, alpha);
  const Sampling sampling{alpha, seed};
  return encode_with(text, &sampling, workspace, ids, count);
}

Status Tokenizer::encode_with(std::string_view text, const Sampling* sampling, std::span<std::byte> workspace,
                              std::span<int32_t> ids, size_t* count) const {
  *count = 0;
  const size_t capacity = max_encoded_ids(text.size());
  if (capacity > kMaxNormalizedBytes)
    return Status::error(Errc::capacity_exceeded, "tokenizer: input of %zu bytes is too long", text.size());
  const size_t needed = encode_workspace_bytes(text.size());
  if (workspace.size() < needed)
    return Status::error(Errc::capacity_exceeded, "tokenizer: encoding %zu bytes needs a %zu-byte workspace, got %zu",
                         text.size(), needed, workspace.size());

  Scratch scratch(workspace);
  size_t n = 0;  // ids written
  const std::span<const int32_t> model_ids = impl_->vocabulary.model_ids;
  if (impl_->vocabulary.language_codes) {
    char* stripped = scratch.take<char>(text.size());
    std::string_view code;
    text = {stripped, strip_language_codes(text, stripped, &code)};
    if (!code.empty()) {  // validate(): language codes come with model ids
      if (ids.empty()) return Status::error(Errc::capacity_exceeded, "tokenizer: no room for the language code's id");
      const int32_t id = impl_->vocabulary.unknown_model_id(code);
      ids[n++] = id >= 0 ? id : model_ids[size_t(impl_->unknown_piece)];
    }
  }
  char* normalized = scratch.take<char>(capacity);
  size_t length = 0;
  MT_RETURN_IF_ERROR(impl_->normalizer->normalize(text, {normalized, capacity}, &length));
  if (length == 0) {
    *count = n;
    return {};
  }
  const std::string_view norm(normalized, length);

  EncodedPiece* pieces = scratch.take<EncodedPiece>(length);
  if (pieces == nullptr) return Status::error(Errc::internal, "tokenizer: workspace planning is wrong");
  size_t piece_count = 0;
  if (sampling != nullptr) {
    MT_RETURN_IF_ERROR(
        impl_->unigram->sample(norm, sampling->alpha, sampling->seed, scratch, {pieces, length}, &piece_count));
  } else if (impl_->unigram) {
    MT_RETURN_IF_ERROR(impl_->unigram->encode(norm, scratch, {pieces, length}, &piece_count));
  } else {
    MT_RETURN_IF_ERROR(impl_->bpe->encode(norm, scratch, {pieces, length}, &piece_count));
  }

  // SentencePiece's PopulateSentencePieceText: with byte_fallback an unknown
  // piece is spelt out as byte pieces; otherwise a run of unknowns is one id.
  const auto push = [&](int32_t id) {
    if (n == ids.size()) return false;
    ids[n++] = model_ids.empty() ? id : model_ids[size_t(id)];
    return true;
  };
  const auto full = [&] {
    return Status::error(Errc::capacity_exceeded, "tokenizer: more than %zu ids for %zu input bytes", ids.size(),
                         text.size());
  };
  bool previous_unknown = false;
  for (size_t i = 0; i < piece_count; ++i) {
    const EncodedPiece& p = pieces[i];
    const PieceType type = impl_->vocabulary.piece_type(size_t(p.id));
    const bool unknown = type == PieceType::unknown;
    if (type == PieceType::control)  // SentencePiece fails the same way ("not consumed")
      return Status::error(Errc::invalid_model, "tokenizer: control piece %d matched text", p.id);
    if (unknown && impl_->vocabulary.byte_fallback) {
      for (uint32_t b = 0; b < p.length; ++b) {
        if (!push(impl_->byte_ids[static_cast<uint8_t>(norm[p.start + b])])) return full();
      }
    } else if (unknown && !impl_->vocabulary.unknown_ends.empty()) {
      // One run of unknowns, its text looked up as OPUS-MT's tokenizers do.
      // (SentencePiece merges adjacent unknown pieces into one.)
      uint32_t end = p.start + p.length;
      while (i + 1 < piece_count && impl_->vocabulary.piece_type(size_t(pieces[i + 1].id)) == PieceType::unknown) {
        ++i;
        end = pieces[i].start + pieces[i].length;
      }
      const int32_t id = impl_->vocabulary.unknown_model_id(norm.substr(p.start, end - p.start));
      if (n == ids.size()) return full();
      ids[n++] = id >= 0 ? id : model_ids[size_t(p.id)];
    } else if (!(unknown && previous_unknown)) {
      if (!push(p.id)) return full();
    }
    previous_unknown = unknown;
  }
  *count = n;
  return {};
}

Status Tokenizer::decode(std::span<const int32_t> ids, std::span<char> out, size_t* length) const {
  const Impl& m = *impl_;
  const VocabularyView& v = m.vocabulary;
  size_t n = 0;
  *length = 0;
  const auto put = [&](std::string_view s) {
    if (s.size() > out.size() - n) return false;
    std::memcpy(out.data() + n, s.data(), s.size());
    n += s.size();
    return true;
  };
  const auto full = [&] {
    return Status::error(Errc::capacity_exceeded, "tokenizer: decoding %zu ids needs more than %zu bytes", ids.size(),
                         out.size());
  };

  // Byte pieces: up to 4 pending bytes, written a character at a time as
  // SentencePiece's ProcessBytePieces does (each invalid byte -> U+FFFD).
  char pending[4];
  size_t pending_count = 0;
  const auto emit_bytes = [&](bool at_end) {
    while (pending_count > 0 && (at_end || pending_count == 4)) {
      size_t consumed = 0;
      const std::string_view bytes(pending, pending_count);
      const bool valid = utf8_decode_valid(bytes, &consumed);
      if (!put(valid ? bytes.substr(0, consumed) : kReplacementChar)) return false;
      std::memmove(pending, pending + consumed, pending_count - consumed);
      pending_count -= consumed;
    }
    return true;
  };

  // SentencePiece strips the space symbol that opens the text (the dummy
  // prefix); with remove_extra_whitespaces, from every piece until text appears.
  const bool strip_leading = v.add_dummy_prefix || v.remove_extra_whitespaces;
  bool at_start = true, leading_space_seen = false;
  for (const int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= v.size())
      return Status::error(Errc::invalid_argument, "tokenizer: id %d is out of range [0, %zu)", id, v.size());
    const PieceType type = v.piece_type(size_t(id));
    if (type == PieceType::byte) {
      if (pending_count == 4 && !emit_bytes(false)) return full();
      pending[pending_count++] = static_cast<char>(m.byte_values[id]);
      if (!emit_bytes(false)) return full();
      continue;
    }
    if (!emit_bytes(true)) return full();
    if (leading_space_seen || n > 0) at_start = false;
    leading_space_seen = false;
    if (type == PieceType::control) continue;
    if (type == PieceType::unknown) {
      if (!put(v.unk_surface)) return full();
      continue;
    }
    std::string_view piece = v.piece(size_t(id));
    if (at_start && strip_leading && piece.starts_with(kSpaceSymbol)) {
      piece.remove_prefix(kSpaceSymbol.size());
      leading_space_seen = !v.remove_extra_whitespaces;
    }
    for (size_t i = 0; i < piece.size();) {
      if (piece.substr(i).starts_with(kSpaceSymbol)) {
        if (!put(" ")) return full();
        i += kSpaceSymbol.size();
      } else {
        if (!put(piece.substr(i, 1))) return full();
        ++i;
      }
    }
  }
  if (!emit_bytes(true)) return full();
  *length = n;
  return {};
}

}  // namespace mt::detail
