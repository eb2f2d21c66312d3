// mt_vocab: trains a joint SentencePiece vocabulary, or describes one.
//
//   mt_vocab train --input train.en --input train.de --vocab-size 8000 [--vocab-type unigram|bpe] -o vocab.model
//   mt_vocab info vocab.model
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "support/atomic_file.hpp"
#include "cli_args.hpp"
#include "cli_files.hpp"
#include "guarded_main.hpp"
#include "vocab/vocab_train.hpp"
#include "vocabulary_file.hpp"

namespace {

using mt::cli::Option;
constexpr const char* kTool = "mt_vocab";

constexpr const char* kSynopsis = R"(usage:
  mt_vocab train --input FILE [--input FILE ...] -o FILE [options]
  mt_vocab info FILE           (a SentencePiece .model, or a libmt model's embedded vocabulary)

train: a joint vocabulary for all the input files (source and target sides
together) with SentencePiece, written as a SentencePiece .model file whose
special ids are libmt's: pad 0, bos 1, eos 2, unk 3. Embed it into a model
with `mt_model random --vocab FILE` or the trainer.)";

constexpr Option kOptions[] = {
    {"--input", "-i", "FILE", "training text, one sentence per line (repeat for more files; - : standard input)", true},
    {"--output", "-o", "FILE", "where to write the .model file"},
    {"--force", nullptr, nullptr, "replace an existing output file"},
    {"--vocab-size", nullptr, "N", "vocabulary size (default 8000)", false, "--size --vocab_size"},
    {"--vocab-type", nullptr, "T", "unigram or bpe (default unigram)", false, "--type --model_type"},
    {"--byte-fallback", nullptr, nullptr, "unknown characters become UTF-8 byte pieces"},
    {"--character-coverage", nullptr, "X", "share of characters covered (default 1.0; 0.9995 for CJK)"},
    {"--sample", nullptr, "N", "train on N sentences sampled from the input (default: all)", false,
     "--input_sentence_size --max-sentences"},
    {"--normalization", nullptr, "NAME",
     "nmt_nfkc (default), nfkc, nmt_nfkc_cf, nfkc_cf, identity, or nmt_nfkc_cjk:\n"
     "nmt_nfkc keeping full-width punctuation (，？！ stay as written)"},
    {"--soft-limit", nullptr, nullptr, "allow fewer pieces than --vocab-size when the corpus is small"},
    {"--threads", nullptr, "N", "threads (default 1, as every tool)"},
    {"--seed", nullptr, "N", "(default 1)"},
};

int fail(const std::string& message) { return mt::cli::fail(kTool, message); }
int usage(const std::string& message) { return mt::cli::usage_error(kTool, message); }

// Standard input copied into a temporary file, removed with this object.
class StdinCopy {
 public:
  ~StdinCopy() {
    if (!path_.empty()) std::remove(path_.c_str());
  }
  std::string make() {
    mt::cli::Input in("-");
    if (in.stream() == nullptr) return in.error();
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/mt_vocab.stdin.XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return "cannot make a temporary file for standard input: " + std::string(std::strerror(errno));
    path_ = path;
    ::close(fd);
    std::ofstream out(path_, std::ios::binary);
    out << in.stream()->rdbuf();
    if (!out.flush()) return "cannot copy standard input to " + path_;
    return "";
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

int info(const std::string& path) {
  auto v = mt::cli::read_vocabulary(path);
  if (!v) return fail(v.status().message());
  std::printf("type            %s\n", v->type == mt::VocabularyType::bpe ? "bpe" : "unigram");
  std::printf("pieces          %zu\n", v->pieces.size());
  std::printf("normalization   %s\n", v->normalization_name.empty() ? "identity" : v->normalization_name.c_str());
  std::printf("byte fallback   %s\n", v->byte_fallback ? "yes" : "no");
  for (int i = 0; i < 4 && i < int(v->pieces.size()); ++i)
    std::printf("id %d            %s\n", i, v->pieces[size_t(i)].text.c_str());
  return 0;
}

int run(int argc, char** argv) {
  mt::cli::Args args(argc, argv, kOptions);
  const std::string help = mt::cli::help_text(kSynopsis, kOptions);
  if (const int rc = mt::cli::standard_options(kTool, args, help); rc >= 0) return rc;
  const auto& pos = args.positional();
  if (pos.empty()) return usage("a command is required: train or info FILE");
  if (pos[0] == "info") {
    if (pos.size() != 2) return usage("info takes one file, not " + std::to_string(pos.size() - 1));
    for (const Option& o : kOptions) {
      if (args.has(o.name)) return usage(std::string("option ") + o.name + " does not apply to 'info'");
    }
    return info(pos[1]);
  }
  if (pos[0] != "train") return usage("unknown command '" + pos[0] + "': train or info FILE");
  if (pos.size() != 1) return usage("train takes its files as --input FILE, not '" + pos[1] + "'");

  mt::vocab::TrainOptions o;
  o.inputs = args.all("--input");
  o.vocab_size = args.get_int("--vocab-size", 8000, 8, 1 << 20);
  o.byte_fallback = args.has("--byte-fallback");
  o.soft_limit = args.has("--soft-limit");
  o.character_coverage = args.get_float("--character-coverage", 1.0f, 0.5f, 1.0f);
  o.max_sentences = args.get_int("--sample", 0, 0, 1 << 30);
  o.threads = args.get_int("--threads", 1, 1, 256);
  o.seed = unsigned(args.get_int("--seed", 1, 0, 1 << 30));
  o.normalization =
      args.get_choice("--normalization", mt::vocab::kNormalizations, "nmt_nfkc");
  const std::string type = args.get_choice("--vocab-type", {"unigram", "bpe"}, "unigram");
  const std::string output = args.get("--output", "");
  if (!args.ok()) return usage(args.error());
  o.type = type == "bpe" ? mt::VocabularyType::bpe : mt::VocabularyType::unigram;
  if (o.inputs.empty()) return usage("train needs --input FILE");
  if (output.empty()) return usage("train needs -o FILE");
  if (std::count(o.inputs.begin(), o.inputs.end(), "-") > 1) return usage("standard input (-) can be read once");
  for (const std::string& in : o.inputs) {
    if (in == "-") continue;
    if (std::string why = mt::cli::unreadable_file(in); !why.empty()) return fail(why);
  }
  if (std::string why = mt::cli::unwritable_file(output, args.has("--force")); !why.empty()) return fail(why);
  // SentencePiece trains from files: standard input goes through a temporary one.
  StdinCopy stdin_copy;
  for (std::string& in : o.inputs) {
    if (in != "-") continue;
    if (std::string why = stdin_copy.make(); !why.empty()) return fail(why);
    in = stdin_copy.path();
  }
  std::string proto;
  auto vocab = mt::vocab::train(o, &proto);
  if (!vocab) return fail(vocab.status().message());
  const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(proto.data()), proto.size());
  if (const mt::Status s = mt::detail::write_file_atomically(output, bytes); !s.ok()) return fail(s.message());
  std::printf("wrote %s: %zu pieces (%s)\n", output.c_str(), vocab->pieces.size(), type.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mt::cli::guarded_main(kTool, argc, argv, run); }
