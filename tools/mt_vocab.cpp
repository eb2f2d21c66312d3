// mt_vocab: trains a joint SentencePiece vocabulary, or describes one.
//
//   mt_vocab train --input train.en --input train.de --size 8000 [--type unigram|bpe] -o vocab.model
//   mt_vocab info vocab.model
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "guarded_main.hpp"
#include "cli_args.hpp"
#include "vocab/vocab_train.hpp"

namespace {

constexpr const char* kUsage = R"(usage:
  mt_vocab train --input FILE [--input FILE ...] -o FILE [options]
  mt_vocab info FILE

train: a joint vocabulary for all the input files (source and target sides
together) with SentencePiece, written as a SentencePiece .model file whose
special ids are libmt's: pad 0, bos 1, eos 2, unk 3. Embed it into a model
with `mt_model random --vocab FILE` or the trainer.

options:
  --input FILE               training text, one sentence per line (repeat for more files)
  -o, --output FILE          where to write the .model file
  --size N                   vocabulary size (default 8000)
  --type unigram|bpe         model type (default unigram)
  --byte-fallback            unknown characters become UTF-8 byte pieces
  --character-coverage X     share of characters covered (default 1.0; 0.9995 for CJK)
  --max-sentences N          sample N sentences (default: all)
  --normalization NAME       nmt_nfkc (default), nfkc, nmt_nfkc_cf, nfkc_cf or identity
  --soft-limit               allow fewer pieces than --size when the corpus is small
  --threads N                (default 2)
  --seed N                   (default 1)
)";

int fail(const std::string& message) {
  std::fprintf(stderr, "mt_vocab: %s\n", message.c_str());
  return 1;
}

int info(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail("cannot open '" + path + "'");
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto v = mt::VocabularyData::from_sentencepiece(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  if (!v) return fail(path + ": " + v.status().message());
  std::printf("type            %s\n", v->type == mt::VocabularyType::bpe ? "bpe" : "unigram");
  std::printf("pieces          %zu\n", v->pieces.size());
  std::printf("normalization   %s\n", v->normalization_name.c_str());
  std::printf("byte fallback   %s\n", v->byte_fallback ? "yes" : "no");
  for (int i = 0; i < 4 && i < int(v->pieces.size()); ++i) std::printf("id %d            %s\n", i, v->pieces[size_t(i)].text.c_str());
  return 0;
}

int run(int argc, char** argv) {
  mt::cli::Args args(argc, argv, {"--byte-fallback", "--soft-limit", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  const auto& pos = args.positional();
  if (pos.size() == 2 && pos[0] == "info") return info(pos[1]);
  if (pos.size() != 1 || pos[0] != "train") return fail("expected 'train' or 'info FILE' (see --help)");

  args.reject_unknown({"--input", "-o", "--output", "--size", "--type", "--byte-fallback", "--character-coverage",
                       "--max-sentences", "--normalization", "--soft-limit", "--threads", "--seed"});
  mt::vocab::TrainOptions o;
  o.inputs = args.all("--input");
  o.vocab_size = args.get_int("--size", 8000, 8, 1 << 20);
  o.byte_fallback = args.has("--byte-fallback");
  o.soft_limit = args.has("--soft-limit");
  o.character_coverage = args.get_float("--character-coverage", 1.0f, 0.5f, 1.0f);
  o.max_sentences = args.get_int("--max-sentences", 0, 0, 1 << 30);
  o.threads = args.get_int("--threads", 2, 1, 256);
  o.seed = unsigned(args.get_int("--seed", 1, 0, 1 << 30));
  o.normalization = args.get("--normalization", "nmt_nfkc");
  const std::string type = args.get("--type", "unigram");
  const std::string output = args.get("-o", args.get("--output", ""));
  if (!args.ok()) return fail(args.error());
  if (type == "unigram") {
    o.type = mt::VocabularyType::unigram;
  } else if (type == "bpe") {
    o.type = mt::VocabularyType::bpe;
  } else {
    return fail("unknown --type '" + type + "' (unigram or bpe)");
  }
  if (o.inputs.empty()) return fail("train needs --input FILE");
  if (output.empty()) return fail("train needs -o FILE");
  for (const std::string& in : o.inputs) {
    if (!std::ifstream(in)) return fail("cannot open '" + in + "'");
  }
  std::string proto;
  auto vocab = mt::vocab::train(o, &proto);
  if (!vocab) return fail(vocab.status().message());
  const std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(proto.data(), std::streamsize(proto.size()));
    if (!out.flush()) {
      std::remove(tmp.c_str());
      return fail("cannot write '" + output + "'");
    }
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    std::remove(tmp.c_str());
    return fail("cannot write '" + output + "'");
  }
  std::printf("wrote %s: %zu pieces (%s)\n", output.c_str(), vocab->pieces.size(), type.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mt::cli::guarded_main("mt_vocab", argc, argv, run); }
