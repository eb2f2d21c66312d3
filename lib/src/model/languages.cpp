#include "mt/languages.hpp"

#include <algorithm>
#include <charconv>

namespace mt {
namespace {

std::string_view metadata_value(const Model& model, std::string_view key) {
  for (const KeyValue& kv : model.metadata().extra) {
    if (kv.key == key) return kv.value;
  }
  return {};
}

// The token named `language`: the token itself, or its code inside >>…<< or __…__.
const LanguageToken* find(const std::vector<LanguageToken>& tokens, std::string_view language) {
  const std::string forms[] = {std::string(language), ">>" + std::string(language) + "<<",
                               "__" + std::string(language) + "__"};
  for (const std::string& form : forms) {
    for (const LanguageToken& t : tokens) {
      if (t.token == form) return &t;
    }
  }
  return nullptr;
}

Status unknown(const char* kind, std::string_view language, const std::vector<LanguageToken>& tokens) {
  std::string some;
  for (size_t i = 0; i < tokens.size() && i < 12; ++i) some += (i ? " " : "") + tokens[i].token;
  if (tokens.size() > 12) some += " ...";
  return Status::error(Errc::invalid_argument, "%s '%.*s': not one of this model's languages (%s)", kind,
                       int(language.size()), language.data(), some.c_str());
}

}  // namespace

std::vector<LanguageToken> language_tokens(const Model& model) {
  std::vector<LanguageToken> tokens;
  std::string_view list = metadata_value(model, "language_tokens");
  // Marian's tokens are source ids (they start the source); M2M-100's and NLLB's both.
  const ModelConfig& c = model.config();
  const int32_t vocab = metadata_value(model, "language_placement") == "source_text"
                            ? c.source_vocab_size
                            : std::min(c.source_vocab_size, c.target_vocab_size);
  while (!list.empty()) {
    const size_t space = list.find(' ');
    const std::string_view entry = list.substr(0, space);
    list = space == std::string_view::npos ? std::string_view() : list.substr(space + 1);
    const size_t equals = entry.rfind('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    int32_t id = -1;
    const auto [end, error] = std::from_chars(entry.data() + equals + 1, entry.data() + entry.size(), id);
    // A damaged entry is skipped: ids outside the vocabulary would be refused by translate anyway.
    if (error != std::errc() || end != entry.data() + entry.size() || id < 0 || id >= vocab) continue;
    tokens.push_back({std::string(entry.substr(0, equals)), id});
  }
  return tokens;
}

Expected<LanguagePrefixes> language_prefixes(const Model& model, std::string_view source_language,
                                             std::string_view target_language) {
  LanguagePrefixes out;
  if (source_language.empty() && target_language.empty()) return out;
  const std::vector<LanguageToken> tokens = language_tokens(model);
  if (tokens.empty()) {
    return Status::error(Errc::invalid_argument,
                         "this model has no language tokens (it translates one language pair): no language to choose");
  }
  const bool marian = metadata_value(model, "language_placement") == "source_text";
  if (marian && !source_language.empty()) {
    return Status::error(Errc::invalid_argument,
                         "source language: this model's languages are chosen by the target language alone");
  }
  const LanguageToken* source = nullptr;
  const LanguageToken* target = nullptr;
  if (!source_language.empty() && (source = find(tokens, source_language)) == nullptr)
    return unknown("source language", source_language, tokens);
  if (!target_language.empty() && (target = find(tokens, target_language)) == nullptr)
    return unknown("target language", target_language, tokens);
  if (marian) {  // >>xx<< starts the source
    if (target != nullptr) out.source_prefix.push_back(target->id);
    return out;
  }
  if (source != nullptr) out.source_prefix.push_back(source->id);
  if (target != nullptr) out.target_prefix.push_back(target->id);
  return out;
}

}  // namespace mt
