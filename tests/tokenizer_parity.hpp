// Shared by the tokenizer tests: train (or reuse cached) SentencePiece models,
// load one model into both libsentencepiece and libmt's Tokenizer, and compare
// the two on text: ids from EncodeAsIds, text from DecodeIds.
#pragma once

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tokenizer/normalizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocabulary_view.hpp"

namespace mt::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Lines split on '\n' only (a '\r' stays in its line); no final empty line.
inline std::vector<std::string> read_lines(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Trains a model with `args` (plus libmt's id convention) unless the cache
// already holds one trained with the same arguments and inputs. Returns the
// serialized ModelProto.
inline std::string cached_model(const std::string& name, const std::string& args,
                                const std::vector<std::filesystem::path>& inputs) {
  std::string all = "--pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3 --minloglevel=2 " + args;
  std::string fingerprint = all;
  std::string input_list;
  for (const auto& p : inputs) {
    if (!input_list.empty()) input_list += ',';
    input_list += p.string();
    fingerprint += p.string() + std::to_string(std::filesystem::file_size(p)) +
                   (std::filesystem::file_size(p) < (1 << 20) ? read_file(p) : "");
  }
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016zx", std::hash<std::string>{}(fingerprint));
  const std::filesystem::path dir = MT_TEST_CACHE_DIR;
  std::filesystem::create_directories(dir);
  const std::string prefix = (dir / (name + "-" + hash)).string();
  if (!std::filesystem::exists(prefix + ".model")) {
    // Trained under a name of this process, then renamed: ctest may run
    // several tests wanting the same model at once.
    const std::string temporary = prefix + ".tmp" + std::to_string(getpid());
    const auto status =
        sentencepiece::SentencePieceTrainer::Train(all + " --input=" + input_list + " --model_prefix=" + temporary);
    INFO("training " << name << ": " << status.ToString());
    REQUIRE(status.ok());
    std::filesystem::rename(temporary + ".model", prefix + ".model");
    std::filesystem::remove(temporary + ".vocab");
  }
  return read_file(prefix + ".model");
}

// One model loaded twice: the reference and ours, made as a model file's is:
// over flat vocabulary arrays, with the stored piece trie checked.
struct TokenizerPair {
  sentencepiece::SentencePieceProcessor reference;
  std::unique_ptr<const detail::FlatVocabulary> vocabulary;  // what ours points into
  std::vector<uint8_t> trie_edge_counts, trie_labels;        // the stored trie
  std::vector<uint32_t> trie_key_nodes;
  std::unique_ptr<const detail::Tokenizer> ours;
};

inline std::unique_ptr<TokenizerPair> load_pair(const std::string& model_proto) {
  auto pair = std::make_unique<TokenizerPair>();
  const auto loaded = pair->reference.LoadFromSerializedProto(model_proto);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  auto vocabulary =
      VocabularyData::from_sentencepiece({reinterpret_cast<const uint8_t*>(model_proto.data()), model_proto.size()});
  INFO(vocabulary.status().message());
  REQUIRE(vocabulary.ok());
  pair->vocabulary = std::make_unique<const detail::FlatVocabulary>(std::move(vocabulary.value()));
  const detail::VocabularyView& view = pair->vocabulary->view();
  auto trie = detail::piece_trie_of(view, /*user_defined_only=*/false);
  INFO(trie.status().message());
  REQUIRE(trie.ok());
  trie->store(view.size(), &pair->trie_edge_counts, &pair->trie_labels, &pair->trie_key_nodes);
  const detail::PieceTrie::Stored stored{pair->trie_edge_counts, pair->trie_labels, pair->trie_key_nodes};
  auto tokenizer = detail::Tokenizer::create(view, &stored);
  INFO(tokenizer.status().message());
  REQUIRE(tokenizer.ok());
  pair->ours = std::move(tokenizer.value());
  return pair;
}

// Text through a charsmap alone (libmt's Normalizer), with or without the
// dummy prefix space (U+2581) the default options add.
inline std::string normalize_with(const std::vector<uint8_t>& charsmap, std::string_view text,
                                  bool add_dummy_prefix = true) {
  detail::VocabularyView v;
  v.precompiled_charsmap = charsmap;
  v.add_dummy_prefix = add_dummy_prefix;
  auto n = detail::Normalizer::create(v, nullptr);
  REQUIRE(n.ok());
  std::string out(n->max_output_bytes(text.size()), '\0');
  size_t length = 0;
  REQUIRE(n->normalize(text, {out.data(), out.size()}, &length).ok());
  out.resize(length);
  return out;
}

// Our encode with buffers sized by the tokenizer's own bounds.
inline std::vector<int> encode(const detail::Tokenizer& t, std::string_view text) {
  std::vector<std::byte> workspace(t.encode_workspace_bytes(text.size()));
  std::vector<int32_t> ids(t.max_encoded_ids(text.size()));
  size_t count = 0;
  const Status s = t.encode(text, workspace, ids, &count);
  INFO(s.message());
  REQUIRE(s.ok());
  return std::vector<int>(ids.begin(), ids.begin() + count);
}

inline std::string decode(const detail::Tokenizer& t, const std::vector<int>& ids) {
  std::vector<int32_t> in(ids.begin(), ids.end());
  std::string out(t.max_decoded_bytes(ids.size()), '\0');
  size_t length = 0;
  const Status s = t.decode(in, {out.data(), out.size()}, &length);
  INFO(s.message());
  REQUIRE(s.ok());
  out.resize(length);
  return out;
}

inline std::string escape(std::string_view s) {
  std::string out;
  for (const unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

inline std::string join(const std::vector<int>& ids) {
  std::string s;
  for (const int id : ids) {
    if (!s.empty()) s += ' ';
    s += std::to_string(id);
  }
  return s;
}

// Compares encode and decode on every text; reports the first few
// differences, then fails if there was any. Returns the number compared.
class ParityChecker {
 public:
  explicit ParityChecker(const TokenizerPair& pair) : pair_(pair) {}

  void check(std::string_view text) {
    ++compared_;
    const std::vector<int> expected = pair_.reference.EncodeAsIds(text);
    const std::vector<int> got = encode(*pair_.ours, text);
    if (got != expected) {
      report("encode \"" + escape(text) + "\": expected [" + join(expected) + "] got [" + join(got) + "]");
      return;
    }
    check_decode(expected);
  }

  void check_decode(const std::vector<int>& ids) {
    const std::string expected = pair_.reference.DecodeIds(ids);
    const std::string got = decode(*pair_.ours, ids);
    if (got != expected)
      report("decode [" + join(ids) + "]: expected \"" + escape(expected) + "\" got \"" + escape(got) + "\"");
  }

  size_t failures() const { return failures_; }
  size_t compared() const { return compared_; }
  void require_none() const { REQUIRE(failures_ == 0); }

 private:
  void report(const std::string& what) {
    if (++failures_ <= 5) FAIL_CHECK(what);
  }
  const TokenizerPair& pair_;
  size_t failures_ = 0;
  size_t compared_ = 0;
};

}  // namespace mt::test
