// libmt.split_sentences and the pieces Translator.translate_paragraphs
// shares with it: split modes and prefix lists from Python arguments.
#include "paragraphs_binding.hpp"

#include <pybind11/stl.h>

#include "errors.hpp"
#include "text.hpp"

namespace py = pybind11;

namespace mt::python {

SplitMode split_mode_of(const std::string& name) {
  auto mode = parse_split_mode(name);
  if (!mode) throw py::value_error("mode = '" + name + "': must be 'sentence', 'lines' or 'wrapped'");
  return mode.value();
}

std::optional<NonBreakingPrefixes> prefixes_of(py::handle prefixes, py::handle language) {
  if (!prefixes.is_none() && !language.is_none())
    throw py::value_error("prefixes and prefix_language: give one or neither");
  if (!prefixes.is_none()) {
    auto parsed = NonBreakingPrefixes::parse(utf8_of(prefixes, "prefixes"));
    check(parsed.status(), "prefixes");
    return std::move(parsed.value());
  }
  if (!language.is_none()) {
    auto builtin = NonBreakingPrefixes::builtin(cast_argument<std::string>(language, "prefix_language", "str or None"));
    check(builtin.status());
    return std::move(builtin.value());
  }
  return std::nullopt;
}

py::list spans_of(py::handle text, std::string_view utf8, const std::vector<size_t>& offsets, size_t per_item,
                  const std::vector<std::vector<py::object>>& extra, bool surrogates_passed) {
  const bool is_str = PyUnicode_Check(text.ptr());
  const std::vector<size_t> at = is_str ? str_offsets(utf8, offsets, surrogates_passed) : offsets;
  py::list out;
  for (size_t i = 0; i * per_item < at.size(); ++i) {
    py::list item;
    for (size_t k = 0; k < per_item; k += 2)
      item.append(py::make_tuple(at[i * per_item + k], at[i * per_item + k + 1]));
    for (const py::object& o : extra[i]) item.append(o);
    out.append(py::tuple(item));
  }
  return out;
}

void bind_paragraphs(py::module_& m) {
  m.def(
      "_split_sentences",
      [](py::handle text, const std::string& mode, py::handle prefixes, py::handle prefix_language) {
        bool passed = false;
        const std::string utf8 = utf8_of(text, "text", &passed);
        const std::optional<NonBreakingPrefixes> list = prefixes_of(prefixes, prefix_language);
        const SentenceSplitter splitter(split_mode_of(mode), list ? &*list : nullptr);
        std::vector<size_t> offsets;
        std::vector<std::vector<py::object>> paragraphs;
        for (const SentenceRange& r : splitter.split(utf8)) {
          offsets.push_back(r.begin);
          offsets.push_back(r.end);
          paragraphs.push_back({py::int_(r.paragraph)});
        }
        return spans_of(text, utf8, offsets, 2, paragraphs, passed);
      },
      py::arg("text"), py::arg("mode"), py::arg("prefixes"), py::arg("prefix_language"));
  m.def(
      "_builtin_prefix_list",
      [](const std::string& language) {
        const std::string_view list = NonBreakingPrefixes::builtin_list(language);
        return str_of(list);
      },
      py::arg("language"));
}

}  // namespace mt::python
