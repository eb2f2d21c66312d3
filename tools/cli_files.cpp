#include "cli_files.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>

namespace mt::cli {

std::string unreadable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "cannot read '" + path + "': " + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "cannot read '" + path + "': it is a directory, not a file";
  // Opening says whether it can be read (access() does not work under
  // Emscripten's file system, which answers EACCES to everything).
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "cannot read '" + path + "': " + std::strerror(errno);
  std::fclose(f);
  return "";
}

std::string unwritable_file(const std::string& path, bool force) {
  if (path == "-") return "'-' (standard output) is for text; this output needs a file name";
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "cannot write '" + path + "': it is a directory";
    if (!force) return "'" + path + "' exists; add --force to replace it";
  }
  std::filesystem::path folder = std::filesystem::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (::stat(folder.c_str(), &st) != 0)
    return "cannot write '" + path + "': " + folder.string() + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return "cannot write '" + path + "': " + folder.string() + " is not a directory";
#ifndef __EMSCRIPTEN__  // whose access() answers EACCES to everything: the write itself will say
  if (::access(folder.c_str(), W_OK) != 0)
    return "cannot write '" + path + "': " + folder.string() + ": " + std::strerror(errno);
#endif
  return "";
}

Input::Input(const std::string& path) {
  if (path.empty() || path == "-") {
    name_ = "standard input";
    is_stdin_ = true;
#ifdef __EMSCRIPTEN__  // Node's standard input has no fstat there: read it as it comes
    stream_ = &std::cin;
#else
    struct stat st {};
    if (::fstat(STDIN_FILENO, &st) != 0) {
      error_ = std::string("cannot read standard input: ") + std::strerror(errno);
    } else if (S_ISDIR(st.st_mode)) {
      error_ = "cannot read standard input: it is a directory";
    } else {
      stream_ = &std::cin;
    }
#endif
    return;
  }
  name_ = path;
  error_ = unreadable_file(path);
  if (!error_.empty()) return;
  file_.open(path, std::ios::binary);
  if (!file_) {
    error_ = "cannot open '" + path + "': " + std::strerror(errno);
    return;
  }
  stream_ = &file_;
}

Output::Output(const std::string& path) {
  if (path.empty() || path == "-") {
    name_ = "standard output";
    file_ = stdout;
    return;
  }
  name_ = path;
  error_ = unwritable_file(path, true);
  if (!error_.empty()) return;
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    error_ = "cannot write '" + path + "': " + std::strerror(errno);
    return;
  }
  owned_ = true;
}

Output::~Output() {
  if (owned_) std::fclose(file_);
}

bool read_file(const std::string& path, std::string* bytes, std::string* error) {
  *error = unreadable_file(path);
  if (!error->empty()) return false;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  bytes->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  if (f.bad()) {
    *error = "error reading '" + path + "'";
    return false;
  }
  return true;
}

bool read_lines(std::istream& in, std::vector<std::string>* lines, size_t max_lines) {
  std::string line;
  while (lines->size() < max_lines && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines->push_back(std::move(line));
  }
  return !in.bad();
}

Expected<std::vector<std::string>> read_lines(const std::string& path, size_t max_lines) {
  if (std::string why = unreadable_file(path); !why.empty()) return Status::error(Errc::io_error, "%s", why.c_str());
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(Errc::io_error, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  std::vector<std::string> lines;
  if (!read_lines(f, &lines, max_lines)) return Status::error(Errc::io_error, "error reading '%s'", path.c_str());
  return lines;
}

Expected<std::shared_ptr<const Model>> write_runnable_model(const ModelWriter& writer, const std::string& path) {
  MT_RETURN_IF_ERROR(writer.write(path));
  auto written = Model::load(path);
  SessionOptions one;
  one.max_batch_size = 1;
  auto session = written ? Session::create(written.value(), one) : Expected<Session>(written.status());
  if (!session) {
    std::remove(path.c_str());
    return Status::error(session.status().code(), "%s would not run: %s (not written)", path.c_str(),
                         session.status().message());
  }
  return written;
}

}  // namespace mt::cli
