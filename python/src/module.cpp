// libmt._libmt: the native half of the libmt package (python/libmt/ is the
// other, in Python).
#include <pybind11/pybind11.h>

#include "bindings.hpp"
#include "errors.hpp"
#include "mt/version.hpp"

PYBIND11_MODULE(_libmt, m) {
  m.doc() = "libmt's C++ API for Python: models, translators and model writing.";
  m.attr("__version__") = mt::kVersion;
  mt::python::bind_errors(m);
  mt::python::bind_config(m);
  mt::python::bind_model(m);
  mt::python::bind_translator(m);
  mt::python::bind_writer(m);
  mt::python::bind_paragraphs(m);
  mt::python::bind_quantize(m);
}
