#include "vocab_train.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <span>
#include <string>
#include <unordered_map>

namespace mt::vocab {
namespace {

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
