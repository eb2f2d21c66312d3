// The command-line grammar every tool shares: an option table per tool (what
// --help prints is what the parser accepts), "--opt value" and "--opt=value"
// for long and short forms alike, switches that take no value, errors for an
// unknown or repeated option (with a "did you mean" for near misses and for
// other tools' spellings), "--" ending the options, and the exit codes.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "mt/session.hpp"

namespace mt::cli {

// Exit codes of every tool: 0 done, 1 a failure (a file that does not load,
// a line refused, out of memory), 2 a usage error (an unknown, repeated or
// malformed option, a missing argument).
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// One option of a tool.
struct Option {
  const char* name;                  // "--beam"
  const char* short_name = nullptr;  // "-m", or none
  const char* value = nullptr;       // what it takes ("N", "FILE"); none: a switch
  const char* help = "";             // --help's text; '\n' continues it on an aligned line
  bool repeatable = false;           // may be given more than once (each value kept)
  // Other tools' spellings of the same idea (Marian, CTranslate2, sacreBLEU),
  // space-separated: refused like any unknown option, with this one suggested.
  const char* foreign = nullptr;
};

class Args {
 public:
  // Parses argv[first..argc) against `options` (--help, -h and --version are
  // every tool's, added here). Values are looked up by the long name.
  Args(int argc, char** argv, std::span<const Option> options, int first = 1);

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool wants_help() const { return help_; }
  bool wants_version() const { return version_; }
  const std::vector<std::string>& positional() const { return positional_; }

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback) const;
  // Every value of a repeatable option, in order.
  std::vector<std::string> all(const std::string& name) const;
  // A whole number in [lo, hi]; records an error otherwise.
  int get_int(const std::string& name, int fallback, int lo, int hi);
  float get_float(const std::string& name, float fallback, float lo, float hi);
  // One of `choices`; records an error listing them otherwise.
  std::string get_choice(const std::string& name, std::span<const char* const> choices, const char* fallback);
  std::string get_choice(const std::string& name, std::initializer_list<const char*> choices, const char* fallback) {
    return get_choice(name, std::span<const char* const>(choices.begin(), choices.size()), fallback);
  }
  // Records a usage error (the first one is kept).
  void set_error(const std::string& message);

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
  std::string error_;
  bool help_ = false, version_ = false;
};

// The text --help prints: `synopsis`, the options aligned with their values
// and help, then `epilog`.
std::string help_text(const char* synopsis, std::span<const Option> options, const char* epilog = "");

// The text --version prints: libmt's version, the model format versions it
// reads, this CPU's kernels and whether CUDA is built in.
std::string version_text(const char* tool);

// What each tool's main does first: prints --help or --version (returns 0),
// or a usage error (returns kExitUsage). -1: go on.
int standard_options(const char* tool, const Args& args, const std::string& help);

// "TOOL: message" on standard error; returns kExitFailure.
int fail(const char* tool, const std::string& message);
// "TOOL: message (see TOOL --help)" on standard error; returns kExitUsage.
int usage_error(const char* tool, const std::string& message);
// "TOOL: warning: message" on standard error.
void warn(const char* tool, const std::string& message);

// --thread-split automatic|layers|sentences (default automatic) into *split.
void thread_split_option(Args& args, ThreadSplit* split);

// --device cpu|cuda (default cpu), --gpu N, --tf32, --fp16 and
// --cuda-dequantize into *options. The GPU-only ones given without --device
// cuda are a usage error: they would change nothing.
void device_options(Args& args, SessionOptions* options);
// The options device_options reads, for a tool's table.
std::span<const Option> device_option_table();

// Whether standard error is a terminal (progress bars go there only then).
// In WebAssembly under Node.js, Node's answer: Emscripten's isatty says yes
// for every standard stream.
bool stderr_is_terminal();
// Whether standard input is a terminal (typed lines are translated as they come).
bool stdin_is_terminal();
// Whether standard output is a terminal (mt_translate --stream shows words as they come).
bool stdout_is_terminal();

}  // namespace mt::cli
