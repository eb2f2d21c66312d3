// The tokenizer on arbitrary bytes: encode any text (invalid UTF-8, NULs,
// controls) and decode any ids, with the vocabularies of both shipped
// models (unigram with nmt_nfkc; one with byte fallback). Ids must be in the
// vocabulary and decoding must stay within the bound the tokenizer states.
#include <cstdlib>
#include <string>

#include "fuzz_util.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

struct Vocabularies {
  std::shared_ptr<const mt::Model> models[2];
};

const Vocabularies& vocabularies() {
  static const Vocabularies v = [] {
    Vocabularies out;
    const char* files[2] = {MT_MODELS_DIR "/en-de-tiny.int8.mtm", MT_MODELS_DIR "/en-zh-tiny.int8.mtm"};
    for (int i = 0; i < 2; ++i) {
      auto m = mt::Model::load(files[i]);
      if (!m || (*m)->tokenizer() == nullptr) std::abort();
      out.models[i] = *m;
    }
    return out;
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const mt::detail::Tokenizer& tok = *vocabularies().models[data[0] & 1]->tokenizer();
  const int vocab = tok.size();
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<std::byte> workspace(tok.encode_workspace_bytes(text.size()));
  std::vector<int32_t> ids(tok.max_encoded_ids(text.size()));
  size_t count = 0;
  if (tok.encode(text, workspace, ids, &count).ok()) {
    if (count > ids.size()) std::abort();
    for (size_t i = 0; i < count; ++i)
      if (ids[i] < 0 || ids[i] >= vocab) std::abort();
    std::vector<char> out(tok.max_decoded_bytes(count));
    size_t length = 0;
    if (tok.decode({ids.data(), count}, out, &length).ok() && length > out.size()) std::abort();
  }
  // The same bytes read as ids (any value, in range or not).
  std::vector<int32_t> raw;
  for (size_t i = 1; i + 1 < size; i += 2) raw.push_back(int32_t((data[i] << 8 | data[i + 1]) % (vocab + 8)) - 4);
  std::vector<char> out(tok.max_decoded_bytes(raw.size()));
  size_t length = 0;
  if (tok.decode(raw, out, &length).ok() && length > out.size()) std::abort();
  return 0;
}
