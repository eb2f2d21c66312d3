// Python text <-> UTF-8 bytes for the tokenizer.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

namespace mt::python {

// The UTF-8 bytes of a str, or the bytes of a bytes-like object as given.
// A str that cannot be encoded strictly (lone surrogates, e.g. from a file
// read with errors="surrogateescape") is encoded with "surrogateescape",
// which gives back the original bytes, or else "surrogatepass"; libmt then
// reads each invalid byte as U+FFFD, as SentencePiece does. `what` names the
// argument in the TypeError for anything else.
std::string utf8_of(pybind11::handle text, const char* what);

// The file-system bytes of a path (str, bytes or os.PathLike), as
// os.fsencode(os.fspath(path)) gives them; TypeError for anything else.
std::string path_of(pybind11::handle path);

// A str of UTF-8 bytes libmt produced (always valid; "replace" guards anyway).
pybind11::str str_of(std::string_view utf8);

}  // namespace mt::python
