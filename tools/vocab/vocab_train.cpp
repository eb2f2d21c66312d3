#include "vocab_train.hpp"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <span>
#include <unordered_map>

namespace mt::vocab {

Expected<VocabularyData> train(const TrainOptions& o, std::string* model_proto) {
  if (o.inputs.empty()) return Status::error(Errc::invalid_argument, "vocabulary training needs at least one input file");
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
      {"pad_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"}, {"unk_id", "3"},
      {"minloglevel", "2"},
  };
  if (o.max_sentences > 0) {
    args["input_sentence_size"] = std::to_string(o.max_sentences);
    args["shuffle_input_sentence"] = "true";
  }
  sentencepiece::SetRandomGeneratorSeed(o.seed);
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, nullptr, &proto);
  if (!status.ok()) {
    return Status::error(Errc::invalid_argument, "SentencePiece training failed: %s", status.ToString().c_str());
  }
  auto data = VocabularyData::from_sentencepiece(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(proto.data()), proto.size()));
  if (data.ok() && model_proto != nullptr) *model_proto = std::move(proto);
  return data;
}

}  // namespace mt::vocab
