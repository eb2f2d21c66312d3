// Split modes, prefix lists and spans from Python arguments, for
// libmt.split_sentences and Translator.translate_paragraphs.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mt/mt.hpp"

namespace mt::python {

// "sentence", "lines", "wrapped"; ValueError otherwise.
SplitMode split_mode_of(const std::string& name);

// A prefix list given as its text (prefixes) or by language (libmt's own);
// none: nullopt (the model's, or no list).
std::optional<NonBreakingPrefixes> prefixes_of(pybind11::handle prefixes, pybind11::handle language);

// Items of (begin, end) pairs (per_item offsets each, in pairs) followed by
// `extra` objects; offsets in str indices when `text` is a str, bytes otherwise
// (`surrogates_passed`: as utf8_of encoded `text` into `utf8`).
pybind11::list spans_of(pybind11::handle text, std::string_view utf8, const std::vector<size_t>& offsets,
                        size_t per_item, const std::vector<std::vector<pybind11::object>>& extra,
                        bool surrogates_passed = false);

void bind_paragraphs(pybind11::module_& m);

}  // namespace mt::python
