// Python text <-> UTF-8 bytes for the tokenizer.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <vector>

namespace mt::python {

// The UTF-8 bytes of a str, or the bytes of a bytes-like object as given.
// A str that cannot be encoded strictly (lone surrogates, e.g. from a file
// read with errors="surrogateescape") is encoded with "surrogateescape",
// which gives back the original bytes, or else "surrogatepass"; libmt then
// reads each invalid byte as U+FFFD, as SentencePiece does. `what` names the
// argument in the TypeError for anything else. `surrogates_passed` (may be
// null) says whether "surrogatepass" was used, for str_offsets.
std::string utf8_of(pybind11::handle text, const char* what, bool* surrogates_passed = nullptr);

// The file-system bytes of a path (str, bytes or os.PathLike), as
// os.fsencode(os.fspath(path)) gives them; TypeError for anything else,
// ValueError for a path with a NUL.
std::string path_of(pybind11::handle path);

// A str of UTF-8 bytes libmt produced (always valid; "replace" guards anyway).
pybind11::str str_of(std::string_view utf8);

}  // namespace mt::python

namespace mt::python {

// The str indices of ascending byte offsets into `utf8` (the bytes utf8_of
// gave for a str): each valid UTF-8 character is one index, each byte of an
// invalid sequence one too, as "surrogateescape" decodes them; with
// `surrogates_passed`, each surrogate's three bytes are one index, as
// "surrogatepass" encoded them.
std::vector<size_t> str_offsets(std::string_view utf8, const std::vector<size_t>& byte_offsets,
                                bool surrogates_passed = false);

}  // namespace mt::python
