#include "text.hpp"

#include "tokenizer/utf8.hpp"  // libmt's UTF-8 rules: Python's strict ones

namespace py = pybind11;

namespace mt::python {

std::string utf8_of(py::handle text, const char* what, bool* surrogates_passed) {
  if (surrogates_passed != nullptr) *surrogates_passed = false;
  if (PyUnicode_Check(text.ptr())) {
    Py_ssize_t size = 0;
    if (const char* utf8 = PyUnicode_AsUTF8AndSize(text.ptr(), &size)) return std::string(utf8, size_t(size));
    PyErr_Clear();
    for (const char* errors : {"surrogateescape", "surrogatepass"}) {
      PyObject* bytes = PyUnicode_AsEncodedString(text.ptr(), "utf-8", errors);
      if (bytes != nullptr) {
        std::string out(PyBytes_AS_STRING(bytes), size_t(PyBytes_GET_SIZE(bytes)));
        Py_DECREF(bytes);
        if (surrogates_passed != nullptr) *surrogates_passed = std::string_view(errors) == "surrogatepass";
        return out;
      }
      PyErr_Clear();
    }
    throw py::value_error(std::string(what) + ": a str that cannot be encoded as UTF-8");
  }
  if (PyBytes_Check(text.ptr())) {
    return std::string(PyBytes_AS_STRING(text.ptr()), size_t(PyBytes_GET_SIZE(text.ptr())));
  }
  if (PyByteArray_Check(text.ptr()) || PyMemoryView_Check(text.ptr())) {
    py::buffer_info info = py::reinterpret_borrow<py::buffer>(text).request();
    if (info.itemsize != 1 || info.ndim != 1 || info.strides[0] != 1)
      throw py::type_error(std::string(what) + ": a buffer of bytes is expected");
    return std::string(static_cast<const char*>(info.ptr), size_t(info.size));
  }
  throw py::type_error(std::string(what) + ": expected str or bytes, got " +
                       std::string(py::str(py::type::handle_of(text).attr("__name__"))));
}

std::string path_of(py::handle path) {
  py::module_ os = py::module_::import("os");
  std::string bytes = os.attr("fsencode")(os.attr("fspath")(path)).cast<std::string>();
  // The C library would stop at a NUL and open another file: refuse it, as open() does.
  if (bytes.find('\0') != std::string::npos) throw py::value_error("path: embedded null byte");
  return bytes;
}

py::str str_of(std::string_view utf8) {
  PyObject* s = PyUnicode_DecodeUTF8(utf8.data(), Py_ssize_t(utf8.size()), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

namespace {

// Whether `text` starts with a surrogate as "surrogatepass" encodes it: ED A0..BF 80..BF.
bool starts_with_surrogate(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  return text.size() >= 3 && byte(0) == 0xED && byte(1) >= 0xA0 && byte(1) <= 0xBF && (byte(2) & 0xC0) == 0x80;
}

}  // namespace

std::vector<size_t> str_offsets(std::string_view utf8, const std::vector<size_t>& byte_offsets,
                                bool surrogates_passed) {
  std::vector<size_t> out;
  out.reserve(byte_offsets.size());
  size_t byte = 0, index = 0;
  for (const size_t target : byte_offsets) {
    while (byte < target && byte < utf8.size()) {
      size_t n = 1;  // a malformed byte is one index, as "surrogateescape" decodes it
      if (surrogates_passed && starts_with_surrogate(utf8.substr(byte))) {
        n = 3;
      } else {
        detail::utf8_decode_valid(utf8.substr(byte), &n);
      }
      byte += n;
      ++index;
    }
    out.push_back(index);
  }
  return out;
}

}  // namespace mt::python
