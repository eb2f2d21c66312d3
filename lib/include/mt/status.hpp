// Errors without exceptions or allocation: Status (a code and a message in a
// fixed buffer) and Expected<T> (a value or the Status saying why not).
#pragma once

#include "mt/export.h"

#include <cstdarg>
#include <optional>
#include <utility>

namespace mt {

enum class Errc : int {
  ok = 0,
  invalid_argument = 1,     // a bad option or input given by the caller
  io_error = 2,             // a file could not be opened, mapped or written
  corrupt_model = 3,        // the bytes are not a valid libmt model file
  unsupported_version = 4,  // a model file of a format this libmt does not read
  invalid_model = 5,        // a well-formed file whose contents are inconsistent
  out_of_memory = 6,        // the session's memory could not be allocated
  capacity_exceeded = 7,    // the input is larger than the session was planned for
  internal = 8,             // a broken invariant of libmt itself
  unsupported = 9,          // something this build or machine lacks (e.g. CUDA, a GPU)
  cancelled = 10,           // the caller stopped the call (a sink or callback said so)
};

MT_API const char* errc_name(Errc code);

class MT_API Status {
 public:
  static constexpr int kMaxMessage = 240;

  Status() = default;
  [[gnu::format(printf, 2, 3)]] static Status error(Errc code, const char* format, ...);
  static Status verror(Errc code, const char* format, va_list args);

  bool ok() const { return code_ == Errc::ok; }
  explicit operator bool() const { return ok(); }
  Errc code() const { return code_; }
  const char* message() const { return ok() ? "ok" : message_; }

 private:
  Errc code_ = Errc::ok;
  char message_[kMaxMessage] = {};
};

template <class T>
class Expected {
 public:
  Expected(T value) : value_(std::move(value)) {}
  Expected(Status status) : status_(status) {}

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace mt

// Returns the Status of an expression from the enclosing function when it is an error.
#define MT_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::mt::Status mt_status_ = (expr);        \
    if (!mt_status_.ok()) return mt_status_; \
  } while (0)
