// The tokenizer on arbitrary bytes: encode any text (invalid UTF-8, NULs,
// controls) and decode any ids, with the vocabularies of both shipped
// models (unigram with nmt_nfkc; one with byte fallback) and a crafted BPE
// whose every merge is an unused piece. Ids must be in the
// vocabulary and decoding must stay within the bound the tokenizer states.
// The decode buffers are exactly that bound, uninitialised (ASan's redzone
// ends them): with the crafted BPE's 1,024-byte pieces the bound is megabytes,
// and zeroing it was a quarter of each run.
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz_util.hpp"
#include "tokenizer/tokenizer.hpp"
#include "access.hpp"

namespace {

struct Vocabularies {
  std::shared_ptr<const mt::Model> models[2];
  // BPE over "a" and "b" whose every merge ("ab", "abab", ...) is an unused
  // piece: the crafted case that made unused-piece lookups quadratic.
  std::unique_ptr<const mt::detail::Tokenizer> all_unused_bpe;
};

std::unique_ptr<const mt::detail::Tokenizer> make_all_unused_bpe() {
  mt::VocabularyData v;
  v.type = mt::VocabularyType::bpe;
  v.add_dummy_prefix = false;
  v.remove_extra_whitespaces = false;
  v.pieces.push_back({"<unk>", 0.0f, mt::PieceType::unknown});
  v.pieces.push_back({"a", -1.0f, mt::PieceType::normal});
  v.pieces.push_back({"b", -1.0f, mt::PieceType::normal});
  std::string piece = "ab";
  for (int level = 0; level < 10; ++level, piece += piece) {
    v.pieces.push_back({piece, -2.0f - float(level), mt::PieceType::unused});
  }
  auto t = mt::detail::Tokenizer::create(std::move(v));
  if (!t) std::abort();
  return std::move(t.value());
}

const Vocabularies& vocabularies() {
  static const Vocabularies v = [] {
    Vocabularies out;
    const char* files[2] = {MT_MODELS_DIR "/en-de-tiny.int8.mtm", MT_MODELS_DIR "/en-zh-tiny.int8.mtm"};
    for (int i = 0; i < 2; ++i) {
      auto m = mt::Model::load(files[i]);
      if (!m || mt::detail::tokenizer_of(**m) == nullptr) std::abort();
      out.models[i] = *m;
    }
    out.all_unused_bpe = make_all_unused_bpe();
    return out;
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // data[0] picks the vocabulary: the two shipped ones, or (values 2 and 3
  // of 4) the crafted BPE.
  const Vocabularies& v = vocabularies();
  const mt::detail::Tokenizer& tok =
      (data[0] & 2) ? *v.all_unused_bpe : *mt::detail::tokenizer_of(*v.models[data[0] & 1]);
  const int vocab = tok.size();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<std::byte> workspace(tok.encode_workspace_bytes(text.size()));
  std::vector<int32_t> ids(tok.max_encoded_ids(text.size()));
  size_t count = 0;
  if (tok.encode(text, workspace, ids, &count).ok()) {
    if (count > ids.size()) std::abort();
    for (size_t i = 0; i < count; ++i)
      if (ids[i] < 0 || ids[i] >= vocab) std::abort();
    const size_t bound = tok.max_decoded_bytes(count);
    const auto out = std::make_unique_for_overwrite<char[]>(bound);
    size_t length = 0;
    if (tok.decode({ids.data(), count}, {out.get(), bound}, &length).ok() && length > bound) std::abort();
  }
  // The same bytes read as ids (any value, in range or not).
  std::vector<int32_t> raw;
  for (size_t i = 1; i + 1 < size; i += 2) raw.push_back(int32_t((data[i] << 8 | data[i + 1]) % (vocab + 8)) - 4);
  const size_t bound = tok.max_decoded_bytes(raw.size());
  const auto out = std::make_unique_for_overwrite<char[]>(bound);
  size_t length = 0;
  if (tok.decode(raw, {out.get(), bound}, &length).ok() && length > bound) std::abort();
  return 0;
}
