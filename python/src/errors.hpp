// libmt's Status as Python exceptions: each error code maps to the exception
// a Python user expects, carrying libmt's message (which names the option,
// field or tensor at fault).
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "mt/status.hpp"

namespace mt::python {

// Registers libmt.ModelError on the module.
void bind_errors(pybind11::module_& m);

// Throws the exception for a failed status (invalid_argument and
// capacity_exceeded: ValueError; io_error: OSError, FileNotFoundError when
// the file is missing; a bad model file: ModelError; out_of_memory:
// MemoryError; unsupported and internal: RuntimeError). `context` is
// prefixed to the message when not empty.
[[noreturn]] void throw_status(const Status& status, const std::string& context = {});

inline void check(const Status& status, const std::string& context = {}) {
  if (!status.ok()) throw_status(status, context);
}

// `value` as a T, or TypeError naming `what` and the type expected (pybind11's
// own cast_error is a RuntimeError).
template <class T>
T cast_argument(pybind11::handle value, const std::string& what, const char* expected) {
  try {
    return value.cast<T>();
  } catch (const pybind11::cast_error&) {
    throw pybind11::type_error(what + ": expected " + expected + ", got " +
                               pybind11::type::handle_of(value).attr("__name__").cast<std::string>());
  }
}

}  // namespace mt::python
