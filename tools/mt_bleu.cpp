// mt_bleu: corpus BLEU and chrF, the same figures as sacreBLEU 2 with its defaults.
//
//   mt_bleu REFERENCE [-i HYPOTHESES] [-l SRC-TGT] [--tokenize 13a|zh|none] [--lowercase] [--metrics bleu,chrf]
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "cli_files.hpp"
#include "eval/scoring.hpp"
#include "guarded_main.hpp"
#include "mt/version.hpp"

namespace {

using mt::cli::Option;
constexpr const char* kTool = "mt_bleu";

constexpr const char* kSynopsis = R"(usage: mt_bleu REFERENCE [REFERENCE...] [options] [-i HYPOTHESES]

Scores hypotheses (one per line, standard input or -i) against one or more
reference files, line by line, as sacreBLEU 2 does with its defaults, and prints
"METRIC|SIGNATURE = SCORE ..." per metric. The signature is sacreBLEU's, its
version field replaced by mt_bleu's own and the sacreBLEU version it equals.)";

constexpr Option kOptions[] = {
    {"--input", "-i", "FILE", "hypotheses file instead of standard input (- : standard input)"},
    {"--language-pair", "-l", "SRC-TGT",
     "the pair scored, e.g. en-zh: a Chinese target (zh) takes the zh tokenizer,\n"
     "as sacreBLEU's -l does"},
    {"--tokenize", nullptr, "NAME", "BLEU tokenizer: 13a (default), zh (Chinese), none", false, "-tok"},
    {"--lowercase", nullptr, nullptr, "lowercase before scoring", false, "-lc"},
    {"--metrics", nullptr, "LIST", "bleu, chrf or bleu,chrf (default)", false, "-m"},
    {"--score-only", nullptr, nullptr, "print only the numbers, one per metric", false, "-b"},
};

int fail(const std::string& message) { return mt::cli::fail(kTool, message); }
int usage(const std::string& message) { return mt::cli::usage_error(kTool, message); }

// Share of the non-space characters that are CJK ideographs (U+4E00..U+9FFF,
// three UTF-8 bytes starting 0xE4..0xE9).
double cjk_share(const std::vector<std::string>& lines) {
  size_t cjk = 0, all = 0;
  for (const std::string& line : lines) {
    for (size_t i = 0; i < line.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(line[i]);
      if (c == ' ' || (c & 0xC0) == 0x80) continue;  // spaces, continuation bytes
      ++all;
      cjk += c >= 0xE4 && c <= 0xE9;
    }
  }
  return all == 0 ? 0.0 : double(cjk) / double(all);
}

// sacreBLEU's signature with its version field made mt_bleu's.
std::string own_signature(const std::string& signature) {
  const size_t at = signature.rfind("|version:");
  return (at == std::string::npos ? signature : signature.substr(0, at)) + "|mt_bleu:" + mt::kVersion +
         "|as:sacrebleu-" + mt::eval::kSacrebleuVersion;
}

int run(int argc, char** argv) {
  mt::cli::Args args(argc, argv, kOptions);
  const std::string help = mt::cli::help_text(kSynopsis, kOptions);
  if (const int rc = mt::cli::standard_options(kTool, args, help); rc >= 0) return rc;
  if (args.positional().empty()) return usage("a reference file is required");
  std::string target_language;
  if (args.has("--language-pair")) {
    const std::string pair = args.get("--language-pair", "");
    const size_t dash = pair.find('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == pair.size()) {
      return usage("--language-pair '" + pair + "': expected SRC-TGT, e.g. en-zh");
    }
    target_language = pair.substr(dash + 1);
  }
  mt::eval::BleuOptions bleu_options;
  const std::string fallback = target_language == "zh" ? "zh" : "13a";
  const std::string tok = args.get_choice("--tokenize", {"13a", "zh", "none"}, fallback.c_str());
  bleu_options.tokenizer = tok == "zh"     ? mt::eval::BleuTokenizer::zh
                           : tok == "none" ? mt::eval::BleuTokenizer::none
                                           : mt::eval::BleuTokenizer::tok_13a;
  bleu_options.lowercase = args.has("--lowercase");
  const std::string metrics = args.get_choice("--metrics", {"bleu,chrf", "bleu", "chrf", "chrf,bleu"}, "bleu,chrf");
  if (!args.ok()) return usage(args.error());
  const bool bleu = metrics != "chrf", chrf = metrics != "bleu";

  std::vector<std::vector<std::string>> reference_sets;
  for (const std::string& reference : args.positional()) {
    if (reference == "-") return usage("references must be files (the hypotheses come on standard input)");
    mt::cli::Input ref_in(reference);
    if (ref_in.stream() == nullptr) return fail(ref_in.error());
    if (!mt::cli::read_lines(*ref_in.stream(), &reference_sets.emplace_back()))
      return fail("error reading '" + reference + "'");
  }
  std::vector<std::string> hyps;
  mt::cli::Input hyp_in(args.get("--input", ""));
  if (hyp_in.stream() == nullptr) return fail(hyp_in.error());
  if (!mt::cli::read_lines(*hyp_in.stream(), &hyps)) return fail("error reading " + hyp_in.name());
  for (size_t k = 0; k < reference_sets.size(); ++k) {
    if (hyps.size() != reference_sets[k].size()) {
      return fail("the hypotheses have " + std::to_string(hyps.size()) + " lines, the reference '" +
                  args.positional()[k] + "' " + std::to_string(reference_sets[k].size()));
    }
  }
  bleu_options.references = int(reference_sets.size());
  if (bleu && tok == "13a" && cjk_share(reference_sets[0]) > 0.3) {
    mt::cli::warn(kTool,
                  "the reference looks Chinese: 13a does not split it into words (BLEU near 0); "
                  "use --tokenize zh or -l SRC-zh");
  }

  const bool score_only = args.has("--score-only");
  if (bleu) {
    auto s = mt::eval::corpus_bleu_multi(hyps, reference_sets, bleu_options);
    if (!s) return fail(s.status().message());
    if (score_only) {
      std::printf("%.2f\n", s->score);
    } else {
      std::printf("BLEU|%s = %s\n", own_signature(bleu_options.signature()).c_str(), s->format().substr(7).c_str());
    }
  }
  if (chrf) {
    mt::eval::ChrfOptions chrf_options;
    chrf_options.lowercase = bleu_options.lowercase;
    chrf_options.references = bleu_options.references;
    auto s = mt::eval::corpus_chrf_multi(hyps, reference_sets, chrf_options);
    if (!s) return fail(s.status().message());
    if (score_only) {
      std::printf("%.2f\n", s->score);
    } else {
      std::printf("chrF2|%s = %.2f\n", own_signature(chrf_options.signature()).c_str(), s->score);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return mt::cli::guarded_main(kTool, argc, argv, run); }
