#!/usr/bin/env python3
"""BLEU as the published Multi30k results count it, beside sacreBLEU's.

The published text-only Transformer-tiny result (41.0 on test_2016_flickr) is
BLEU over lowercased, Moses-normalized and Moses-tokenized text (the
dataset's "lc.norm.tok" files, multi-bleu.perl); issue 29 asks for 41.0
lowercased sacreBLEU (13a on detokenized text). This prints both for one
output file, so the two can be compared on our models:

  python bench/multi30k_tokenized_bleu.py REFERENCE.de OUTPUT.de

Needs sacremoses and sacrebleu (pip; used here only, never by libmt).
"""
import sys

import sacrebleu
from sacremoses import MosesPunctNormalizer, MosesTokenizer


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    reference_path, output_path = sys.argv[1], sys.argv[2]
    with open(reference_path, encoding="utf-8") as f:
        references = f.read().splitlines()
    with open(output_path, encoding="utf-8") as f:
        outputs = f.read().splitlines()
    if len(references) != len(outputs):
        sys.exit(f"{reference_path} has {len(references)} lines, {output_path} {len(outputs)}")
    normalizer, tokenizer = MosesPunctNormalizer(lang="de"), MosesTokenizer(lang="de")

    def prepared(line, aggressive):
        return tokenizer.tokenize(normalizer.normalize(line.strip().lower()), aggressive_dash_splits=aggressive,
                                  return_str=True, escape=False)

    for aggressive in (False, True):
        score = sacrebleu.corpus_bleu([prepared(o, aggressive) for o in outputs],
                                      [[prepared(r, aggressive) for r in references]], tokenize="none", force=True)
        print(f"lowercased, Moses-tokenized{' (-a)' if aggressive else ''}: {score.score:.2f}  ({score})")
    score = sacrebleu.corpus_bleu(outputs, [references], lowercase=True)
    print(f"lowercased sacreBLEU (13a): {score.score:.2f}")


if __name__ == "__main__":
    main()
