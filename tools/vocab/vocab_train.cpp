#include "vocab_train.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "text/utf8_walk.hpp"
#include "tokenizer/normalizer.hpp"

namespace mt::vocab {
namespace {

// A few sentences for SentencePiece to train a throwaway model on: only its
// normalizer's compiled rules are wanted.
class FewSentences final : public sentencepiece::SentenceIterator {
 public:
  bool done() const override { return at_ >= lines_.size(); }
  void Next() override { ++at_; }
  const std::string& value() const override { return lines_[at_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  std::vector<std::string> lines_{"abc def", "ghi jkl", "mno pqr"};
  size_t at_ = 0;
};

// SentencePiece's compiled rules for a built-in normalization.
Expected<std::vector<uint8_t>> builtin_charsmap(const std::string& name) {
  FewSentences sentences;
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      {{"model_type", "unigram"}, {"vocab_size", "32"}, {"hard_vocab_limit", "false"}, {"normalization_rule_name", name},
       {"minloglevel", "2"}},
      &sentences, &proto);
  if (!status.ok())
    return Status::error(Errc::internal, "SentencePiece's %s rules: %s", name.c_str(), status.ToString().c_str());
  auto data = VocabularyData::from_sentencepiece(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(proto.data()), proto.size()));
  if (!data) return data.status();
  return std::move(data->precompiled_charsmap);
}

std::vector<char32_t> code_points(std::string_view utf8) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < utf8.size();) {
    const detail::text::CodePoint cp = detail::text::decode_at(utf8, i, utf8.size());
    out.push_back(cp.c);
    i += cp.length;
  }
  return out;
}

// As SentencePiece's rule TSV writes code points: hex, space-separated.
std::string hex(const std::vector<char32_t>& code_points) {
  std::string out;
  for (const char32_t c : code_points) {
    char text[16];
    std::snprintf(text, sizeof(text), "%s%04X", out.empty() ? "" : " ", unsigned(c));
    out += text;
  }
  return out;
}

// nmt_nfkc_cjk keeps these as written: the full-width punctuation NFKC
// folds to ASCII, which Chinese and Japanese text use and their references
// expect (，？！：；（）～ ...). Full-width letters and digits (U+FF10-FF19,
// FF21-FF3A, FF41-FF5A) still fold, half-width forms still widen (｡ -> 。),
// and the ideographic space is still a space.
bool cjk_punctuation(char32_t cp) {
  return (cp >= 0xFF01 && cp <= 0xFF0F) || (cp >= 0xFF1A && cp <= 0xFF20) || (cp >= 0xFF3B && cp <= 0xFF40) ||
         (cp >= 0xFF5B && cp <= 0xFF60);
}

// A rule TSV: nmt_nfkc's rules less those whose input is one CJK punctuation
// mark; written to `path` for SentencePiece's normalization_rule_tsv.
Status write_nmt_nfkc_cjk_rules(const std::string& path) {
  auto charsmap = builtin_charsmap("nmt_nfkc");
  if (!charsmap) return charsmap.status();
  std::vector<std::pair<std::string, std::string>> rules;
  MT_RETURN_IF_ERROR(detail::charsmap_rules(*charsmap, &rules));
  std::ofstream out(path, std::ios::binary);
  for (const auto& [from, to] : rules) {
    const std::vector<char32_t> key = code_points(from);
    if (key.size() == 1 && cjk_punctuation(key[0])) continue;
    out << hex(key) << '\t' << hex(code_points(to)) << '\n';
  }
  out.close();
  if (!out) return Status::error(Errc::io_error, "cannot write normalization rules to '%s'", path.c_str());
  return {};
}

// SentencePiece's own words for the failures a user causes, in the user's
// terms (the options are those of mt_vocab and mt_train); others as they are.
std::string explain_failure(const std::string& message, const TrainOptions& o) {
  if (message.find("!sentences_.empty()") != std::string::npos) {
    return "the training text has no sentences (are the --input files empty?)";
  }
  if (const size_t at = message.find("Vocabulary size too high"); at != std::string::npos) {
    const size_t most = message.find("<= ");
    const std::string limit = most != std::string::npos ? message.substr(most + 3) : "";
    return "the training text is too small for " + std::to_string(o.vocab_size) + " pieces" +
           (limit.empty() ? "" : " (at most " + limit.substr(0, limit.find_first_not_of("0123456789")) + ")") +
           ": lower the vocabulary size, or allow fewer pieces (mt_vocab --soft-limit)";
  }
  if (message.find("No such file") != std::string::npos) return "cannot read the training text: " + message;
  return "SentencePiece training failed: " + message;
}

}  // namespace

Expected<VocabularyData> train(const TrainOptions& o, std::string* model_proto) {
  if (o.inputs.empty())
    return Status::error(Errc::invalid_argument, "vocabulary training needs at least one input file");
  if (o.vocab_size < 8) return Status::error(Errc::invalid_argument, "vocabulary size %d is too small", o.vocab_size);
  if (o.type != VocabularyType::unigram && o.type != VocabularyType::bpe) {
    return Status::error(Errc::invalid_argument, "vocabulary type must be unigram or bpe");
  }
  std::string inputs;
  for (const std::string& in : o.inputs) inputs += (inputs.empty() ? "" : ",") + in;
  std::unordered_map<std::string, std::string> args = {
      {"input", inputs},
      {"model_type", o.type == VocabularyType::bpe ? "bpe" : "unigram"},
      {"vocab_size", std::to_string(o.vocab_size)},
      {"character_coverage", std::to_string(o.character_coverage)},
      {"normalization_rule_name", o.normalization},
      {"byte_fallback", o.byte_fallback ? "true" : "false"},
      {"hard_vocab_limit", o.soft_limit ? "false" : "true"},
      {"num_threads", std::to_string(o.threads)},
      {"pad_id", "0"},
      {"bos_id", "1"},
      {"eos_id", "2"},
      {"unk_id", "3"},
      {"minloglevel", "2"},
  };
  if (o.max_sentences > 0) {
    args["input_sentence_size"] = std::to_string(o.max_sentences);
    args["shuffle_input_sentence"] = "true";
  }
  // A variant of nmt_nfkc is handed to SentencePiece as a rule file (its
  // model then names it "user_defined"; libmt reads any compiled rules).
  // The model records the file's path, so the name is fixed (the same
  // vocabulary twice is the same bytes) and the file stays: written under a
  // name of its own, then renamed over, it is whole for every process that
  // reads it, and its contents depend on SentencePiece's nmt_nfkc alone.
  if (o.normalization == "nmt_nfkc_cjk") {
    std::error_code error;
    std::filesystem::path dir = std::filesystem::temp_directory_path(error);
    if (error) dir = ".";  // $TMPDIR names no folder
    const std::string rules_file = (dir / "mt_vocab_nmt_nfkc_cjk.tsv").string();
    const std::string partial = rules_file + "." + std::to_string(getpid());
    Status st = write_nmt_nfkc_cjk_rules(partial);
    if (st.ok() && std::rename(partial.c_str(), rules_file.c_str()) != 0)
      st = Status::error(Errc::io_error, "cannot write normalization rules to '%s'", rules_file.c_str());
    if (!st.ok()) {
      std::remove(partial.c_str());
      return st;
    }
    args.erase("normalization_rule_name");
    args["normalization_rule_tsv"] = rules_file;
  }
  sentencepiece::SetRandomGeneratorSeed(o.seed);
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &proto);
  if (!status.ok()) return Status::error(Errc::invalid_argument, "%s", explain_failure(status.ToString(), o).c_str());
  auto data = VocabularyData::from_sentencepiece(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(proto.data()), proto.size()));
  if (data.ok() && model_proto != nullptr) *model_proto = std::move(proto);
  return data;
}

}  // namespace mt::vocab
