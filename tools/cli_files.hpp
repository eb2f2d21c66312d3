// Files the tools read and write, with "-" (or nothing) for the standard
// streams and errors that name the path and the cause.
#pragma once

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "mt/model_writer.hpp"
#include "mt/session.hpp"
#include "mt/status.hpp"

namespace mt::cli {

// An input stream: `path`, or standard input for "" and "-". On failure
// stream() is null and error() says why ("cannot read 'x': Is a directory").
class Input {
 public:
  explicit Input(const std::string& path);
  std::istream* stream() { return stream_; }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }  // the path, or "standard input"
  bool is_stdin() const { return is_stdin_; }

 private:
  std::ifstream file_;
  std::istream* stream_ = nullptr;
  std::string error_, name_;
  bool is_stdin_ = false;
};

// An output file: `path`, or standard output for "" and "-". Written as it
// goes (what was written stays written if the run fails later).
class Output {
 public:
  explicit Output(const std::string& path);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  std::FILE* file() { return file_; }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }
  bool is_stdout() const { return file_ == stdout; }

 private:
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  std::string error_, name_;
};

// Why `path` cannot be read as a file ("" when it can): missing, a
// directory, unreadable.
std::string unreadable_file(const std::string& path);

// Why a file cannot be written at `path` ("" when it can): its folder is
// missing or not writable, or it is a directory, or it is "-" (binary files
// do not go to standard output). With `force` false, an existing file is a
// reason too (say --force).
std::string unwritable_file(const std::string& path, bool force);

// Writes the writer's model to `path`, then loads it back and gives it a
// session: a file libmt would not run is removed, with the reason, and
// never left behind. The loaded model otherwise.
Expected<std::shared_ptr<const Model>> write_runnable_model(const ModelWriter& writer, const std::string& path);

// Reads all of `path` into *bytes; false with the reason in *error.
bool read_file(const std::string& path, std::string* bytes, std::string* error);

// A text's lines without their newlines: a final CR dropped (CRLF files), a
// last line without a newline counted (as Python reads them); at most
// `max_lines`. False, or an error naming the path, when reading fails.
bool read_lines(std::istream& in, std::vector<std::string>* lines, size_t max_lines = SIZE_MAX);
Expected<std::vector<std::string>> read_lines(const std::string& path, size_t max_lines = SIZE_MAX);

}  // namespace mt::cli
