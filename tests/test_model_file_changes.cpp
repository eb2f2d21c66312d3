// A model file changed on disk while a Model uses it (Model::load's contract):
// a file renamed over the old one leaves the loaded Model as it was; a copy
// read into memory is immune even to changes in place; and a mapped file
// shortened in place kills the process with SIGBUS, as documented.
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "test_util.hpp"

using namespace mt;

namespace {

// Greedy translations of a few id sentences: the model's fingerprint.
std::vector<std::vector<int32_t>> fingerprint(std::shared_ptr<const Model> model) {
  auto session = Session::create(std::move(model), {});
  REQUIRE(session.ok());
  const auto sources = test::make_sources({3, 7, 12}, test::tiny_config().source_vocab_size, 5);
  const auto spans = test::spans(sources);
  Translations out;
  REQUIRE(session->translate(spans, {}, &out).ok());
  std::vector<std::vector<int32_t>> result;
  for (size_t i = 0; i < out.size(); ++i) result.emplace_back(out[i][0].tokens.begin(), out[i][0].tokens.end());
  return result;
}

// Overwrites `path` in place (same inode), as cp does.
void overwrite_in_place(const std::string& path, const std::string& with) {
  std::ifstream in(with, std::ios::binary);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
  REQUIRE(out);
  out.write(data.data(), std::streamsize(data.size()));
}

}  // namespace

TEST_CASE("a model file renamed over a loaded one leaves the loaded Model unchanged", "[model_file]") {
  const std::string path = test::scratch_path("changing.mtm"), other = test::scratch_path("other.mtm");
  REQUIRE(write_random_model(test::tiny_config(), 1, path).ok());
  REQUIRE(write_random_model(test::tiny_config(), 2, other).ok());
  auto model = Model::load(path);
  REQUIRE(model.ok());
  const auto before = fingerprint(*model);
  std::filesystem::rename(other, path);  // what ModelWriter::write and the tools do
  CHECK(fingerprint(*model) == before);
  auto reloaded = Model::load(path);
  REQUIRE(reloaded.ok());
  CHECK(fingerprint(*reloaded) != before);  // the new file is another model
}

TEST_CASE("Model::save writes the file's bytes through a renamed temporary file", "[model_file]") {
  const std::string path = test::scratch_path("saved-from.mtm"), copy = test::scratch_path("saved.mtm");
  REQUIRE(write_random_model(test::tiny_config(), 4, path).ok());
  auto model = Model::load(path);
  REQUIRE(model.ok());
  REQUIRE((*model)->save(copy).ok());
  auto saved = Model::load(copy);
  REQUIRE(saved.ok());
  const auto a = (*model)->bytes(), b = (*saved)->bytes();
  CHECK(std::vector<uint8_t>(a.begin(), a.end()) == std::vector<uint8_t>(b.begin(), b.end()));
  // Saving over the file the model maps replaces it, never rewrites it in place.
  REQUIRE((*model)->save(path).ok());
  CHECK(fingerprint(*model) == fingerprint(*saved));
  // A folder that does not exist: an error naming the path, and no temporary file anywhere.
  const std::string bad = test::scratch_path("no-such-folder") + "/x.mtm";
  const Status failed = (*model)->save(bad);
  CHECK(failed.code() == Errc::io_error);
  CHECK(std::string(failed.message()).find("no-such-folder") != std::string::npos);
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    CHECK(entry.path().filename().string().find("saved.mtm.tmp.") == std::string::npos);
  }
}

TEST_CASE("a model read into memory is immune to its file changing in place", "[model_file]") {
  const std::string path = test::scratch_path("in-place.mtm"), other = test::scratch_path("in-place-other.mtm");
  REQUIRE(write_random_model(test::tiny_config(), 3, path).ok());
  REQUIRE(write_random_model(test::tiny_config(), 4, other).ok());
  REQUIRE(std::filesystem::file_size(path) == std::filesystem::file_size(other));
  LoadOptions copy;
  copy.read_into_memory = true;
  auto model = Model::load(path, copy);
  REQUIRE(model.ok());
  const auto before = fingerprint(*model);
  overwrite_in_place(path, other);
  CHECK(fingerprint(*model) == before);
  std::filesystem::resize_file(path, 0);
  CHECK(fingerprint(*model) == before);
  // And the mapped load of the changed file does see the change (the test can tell).
  overwrite_in_place(path, other);
  std::filesystem::resize_file(path, std::filesystem::file_size(other));
  auto mapped = Model::load(path);
  REQUIRE(mapped.ok());
  CHECK(fingerprint(*mapped) != before);
}

#if !defined(__EMSCRIPTEN__) && !defined(MT_TEST_EMULATED)
TEST_CASE("a mapped model file shortened in place kills the process with SIGBUS, as documented", "[model_file]") {
  const std::string path = test::scratch_path("shortened.mtm");
  REQUIRE(write_random_model(test::tiny_config(), 5, path).ok());
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    auto model = Model::load(path);
    if (!model.ok()) _exit(3);
    if (truncate(path.c_str(), 0) != 0) _exit(4);
    auto session = Session::create(*model, {});
    const int32_t ids[] = {5, 6, 7};
    const std::span<const int32_t> one[] = {ids};
    Translations out;
    if (session.ok()) (void)session->translate(one, {}, &out);
    _exit(0);  // not reached: the weights are read past the file's end
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  INFO("exited " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << ", signal "
                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
#if defined(__SANITIZE_ADDRESS__)
  CHECK((WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) < 3)));
#else
  CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS));
#endif
}
#endif
