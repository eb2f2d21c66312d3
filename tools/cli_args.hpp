// Small command-line parsing for the tools: "--name value" options with
// checked numbers, so a wrong option is one clear line on stderr.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "mt/session.hpp"

namespace mt::cli {

class Args {
 public:
  // `flags`: options without a value (e.g. "--scores"); all others take one.
  Args(int argc, char** argv, const std::vector<std::string>& flags);

  bool ok() const { return error_.empty() && missing_value_.empty(); }
  std::string error() const {
    return !error_.empty() || missing_value_.empty() ? error_ : "option " + missing_value_ + " needs a value";
  }
  const std::vector<std::string>& positional() const { return positional_; }

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback) const;
  // Every value of an option given several times, in order.
  std::vector<std::string> all(const std::string& name) const;
  // A whole number in [lo, hi]; records an error otherwise.
  int get_int(const std::string& name, int fallback, int lo, int hi);
  float get_float(const std::string& name, float fallback, float lo, float hi);
  // Errors for options not in `known`.
  void reject_unknown(const std::vector<std::string>& known);

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
  std::string error_;
  std::string missing_value_;  // a last option without its value (unless reject_unknown finds it unknown)
};

// --thread-split automatic|layers|sentences (default automatic) into
// *split; false, with the message in *error, for anything else.
bool thread_split_option(Args& args, ThreadSplit* split, std::string* error);

// --device cpu|cuda (default cpu), --gpu N, --tf32, --fp16 and --cuda-int8 into *options; false,
// with the message in *error, for a device other than cpu or cuda.
bool device_options(Args& args, SessionOptions* options, std::string* error);

// Whether standard error is a terminal (progress bars go there only then).
// In WebAssembly under Node.js, Node's answer: Emscripten's isatty says yes
// for every standard stream.
bool stderr_is_terminal();

}  // namespace mt::cli
