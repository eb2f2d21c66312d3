#include "mt/status.hpp"

#include <cstdio>

namespace mt {

const char* errc_name(Errc code) {
  switch (code) {
    case Errc::ok:
      return "ok";
    case Errc::invalid_argument:
      return "invalid argument";
    case Errc::io_error:
      return "I/O error";
    case Errc::corrupt_model:
      return "corrupt model";
    case Errc::unsupported_version:
      return "unsupported version";
    case Errc::invalid_model:
      return "invalid model";
    case Errc::out_of_memory:
      return "out of memory";
    case Errc::capacity_exceeded:
      return "capacity exceeded";
    case Errc::internal:
      return "internal error";
    case Errc::unsupported:
      return "unsupported";
    case Errc::cancelled:
      return "cancelled";
  }
  return "unknown error";
}

Status Status::verror(Errc code, const char* format, va_list args) {
  Status s;
  s.code_ = code == Errc::ok ? Errc::internal : code;
  std::vsnprintf(s.message_, sizeof(s.message_), format, args);
  return s;
}

Status Status::error(Errc code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  Status s = verror(code, format, args);
  va_end(args);
  return s;
}

}  // namespace mt
