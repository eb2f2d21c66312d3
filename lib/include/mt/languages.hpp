// Multilingual models' language tokens: which token stands for which
// language, and where it goes. Converters write them into the model's
// metadata ("language_tokens": "TOKEN=ID ...", "language_placement": how
// they are used); these functions read them, for every binding alike.
#pragma once

#include "mt/export.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mt/model.hpp"
#include "mt/status.hpp"

namespace mt {

struct LanguageToken {
  std::string token;  // e.g. ">>fra<<", "__fr__", "fra_Latn"
  int32_t id = 0;
};

// The model's language tokens, in metadata order; empty for a model of one language pair.
MT_API std::vector<LanguageToken> language_tokens(const Model& model);

// What translating from `source_language` to `target_language` (either may
// be empty: not given) takes: TranslateOptions' prefixes. A language is named
// by its token or by the code inside it ("fra" for ">>fra<<", "fr" for
// "__fr__"). Marian's target language token starts the source (as writing
// ">>fra<<" before the text does); M2M-100's and NLLB's source language token
// starts the source and their target language token is forced first.
struct LanguagePrefixes {
  std::vector<int32_t> source_prefix;
  std::vector<int32_t> target_prefix;
};

// Errors: a language the model does not have (the message lists some it
// has), a model without language tokens, a source language for a model that
// takes the target's alone (Marian).
MT_API Expected<LanguagePrefixes> language_prefixes(const Model& model, std::string_view source_language,
                                                    std::string_view target_language);

}  // namespace mt
