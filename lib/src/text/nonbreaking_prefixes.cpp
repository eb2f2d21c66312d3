// NonBreakingPrefixes: parsing a list, libmt's own lists (lib/data/
// nonbreaking_prefixes/, compiled in as builtin_prefixes.cpp), and lookups.
#include <algorithm>
#include <string>

#include "mt/sentence_splitter.hpp"
#include "text/builtin_prefixes.hpp"
#include "text/model_prefixes.hpp"
#include "text/unicode_classes.hpp"
#include "tokenizer/utf8.hpp"

namespace mt {

namespace {

constexpr size_t kMaxLine = 256;

std::string_view trim(std::string_view s) {
  while (!s.empty() && detail::text::is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && detail::text::is_blank(s.back())) s.remove_suffix(1);
  return s;
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t length = 1;
    if (!detail::utf8_decode_valid(s.substr(i), &length)) return false;
    i += length;
  }
  return true;
}

}  // namespace

Expected<NonBreakingPrefixes> NonBreakingPrefixes::parse(std::string_view list) {
  struct Item {
    std::string_view text;
    Kind kind;
    size_t order;
  };
  std::vector<Item> items;
  size_t line_number = 0;
  for (size_t at = 0; at < list.size();) {
    const size_t nl = list.find('\n', at);
    const std::string_view line = list.substr(at, (nl == std::string_view::npos ? list.size() : nl) - at);
    at = nl == std::string_view::npos ? list.size() : nl + 1;
    ++line_number;
    if (line.size() > kMaxLine) {
      return Status::error(Errc::invalid_argument, "prefix list line %zu is longer than %zu bytes", line_number,
                           kMaxLine);
    }
    if (!valid_utf8(line)) {
      return Status::error(Errc::invalid_argument, "prefix list line %zu is not valid UTF-8", line_number);
    }
    const Kind kind = line.find("#NUMERIC_ONLY#") != std::string_view::npos ? Kind::numeric_only : Kind::always;
    const std::string_view prefix = trim(line.substr(0, line.find('#')));
    if (!prefix.empty()) items.push_back({prefix, kind, items.size()});
  }
  // Sorted by text; of a prefix listed twice, the last line counts.
  std::sort(items.begin(), items.end(),
            [](const Item& a, const Item& b) { return a.text != b.text ? a.text < b.text : a.order > b.order; });
  NonBreakingPrefixes out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && items[i].text == items[i - 1].text) continue;
    out.entries_.push_back({uint32_t(out.text_.size()), uint32_t(items[i].text.size()), items[i].kind});
    out.text_.append(items[i].text);
  }
  return out;
}

NonBreakingPrefixes::Kind NonBreakingPrefixes::find(std::string_view word) const {
  const auto text_of = [&](const Entry& e) { return std::string_view(text_).substr(e.offset, e.length); };
  const auto it = std::lower_bound(entries_.begin(), entries_.end(), word,
                                   [&](const Entry& e, std::string_view w) { return text_of(e) < w; });
  if (it == entries_.end() || text_of(*it) != word) return Kind::none;
  return it->kind;
}

std::string_view NonBreakingPrefixes::builtin_list(std::string_view language) {
  for (const detail::BuiltinPrefixList& l : detail::builtin_prefix_lists()) {
    if (l.language == language) return l.text;
  }
  return {};
}

Expected<NonBreakingPrefixes> NonBreakingPrefixes::builtin(std::string_view language) {
  // Languages written without spaces between sentences need no list.
  if (language == "zh" || language == "ja" || language == "ko") return NonBreakingPrefixes{};
  for (const detail::BuiltinPrefixList& l : detail::builtin_prefix_lists()) {
    if (l.language == language) return parse(l.text);
  }
  std::string known;
  for (const detail::BuiltinPrefixList& l : detail::builtin_prefix_lists()) known += std::string(l.language) + " ";
  return Status::error(Errc::invalid_argument,
                       "no built-in non-breaking prefix list for language '%.*s' (there are: %sand zh, ja, ko)",
                       int(language.size()), language.data(), known.c_str());
}

namespace detail {

namespace {

// Language codes to libmt's two-letter list names: "en", "eng", "en-US", "en_GB".
std::string_view list_language(std::string_view code) {
  static constexpr std::pair<std::string_view, std::string_view> kThreeLetter[] = {
      {"eng", "en"}, {"deu", "de"}, {"ger", "de"}, {"fra", "fr"}, {"fre", "fr"}, {"ces", "cs"},
      {"cze", "cs"}, {"spa", "es"}, {"zho", "zh"}, {"chi", "zh"}, {"jpn", "ja"}, {"kor", "ko"}};
  const std::string_view base = code.substr(0, code.find_first_of("-_"));
  for (const auto& [three, two] : kThreeLetter) {
    if (base == three) return two;
  }
  return base;
}

}  // namespace

Expected<NonBreakingPrefixes> nonbreaking_prefixes_for(const ModelMetadata& metadata) {
  for (const KeyValue& kv : metadata.extra) {
    if (kv.key != "nonbreaking_prefixes") continue;
    auto parsed = NonBreakingPrefixes::parse(kv.value);
    if (!parsed) {
      return Status::error(Errc::invalid_model, "model metadata nonbreaking_prefixes: %s", parsed.status().message());
    }
    return parsed;
  }
  auto builtin = NonBreakingPrefixes::builtin(list_language(metadata.source_language));
  if (builtin) return builtin;
  return NonBreakingPrefixes{};
}

}  // namespace detail

}  // namespace mt
