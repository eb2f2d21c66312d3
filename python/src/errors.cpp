#include "errors.hpp"

#include <cerrno>
#include <string>

namespace py = pybind11;

namespace mt::python {
namespace {

PyObject* model_error = nullptr;  // libmt.ModelError, owned by the module

}  // namespace

void bind_errors(py::module_& m) {
  // A subclass of ValueError: the bytes given are not a usable model (as
  // json.JSONDecodeError is a ValueError), distinct from the OSError of a
  // file that cannot be read.
  static py::exception<std::exception> error(m, "ModelError", PyExc_ValueError);
  error.doc() = "The bytes are not a valid libmt model file, or a file of a format this libmt does not read.";
  model_error = error.ptr();
}

void throw_status(const Status& status, const std::string& context) {
  const std::string message = context.empty() ? status.message() : context + ": " + status.message();
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case Errc::invalid_argument:
    case Errc::capacity_exceeded:
      type = PyExc_ValueError;
      break;
    case Errc::io_error:
      type = message.find("No such file") != std::string::npos ? PyExc_FileNotFoundError : PyExc_OSError;
      break;
    case Errc::corrupt_model:
    case Errc::unsupported_version:
    case Errc::invalid_model:
      type = model_error;
      break;
    case Errc::out_of_memory:
      type = PyExc_MemoryError;
      break;
    case Errc::cancelled:
      type = PyExc_InterruptedError;
      break;
    case Errc::ok:
    case Errc::unsupported:
    case Errc::internal:
      break;
  }
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

}  // namespace mt::python
