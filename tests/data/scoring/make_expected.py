#!/usr/bin/env python3
"""Writes expected.tsv: sacreBLEU's scores for the files beside this script.

Run from this folder with sacreBLEU installed (pip install sacrebleu==2.6.0):
    python3 make_expected.py > expected.tsv
tests/test_scoring.cpp checks mt_eval against these figures.
"""
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().rstrip("\n").split("\n")


print(f"# sacrebleu {sacrebleu.__version__}")
print("hyp\tref\tmetric\toptions\tscore\tdetails")
for hyp, ref, tok in [("hyp.de", "ref.de", "13a"), ("hyp.zh", "ref.zh", "zh"), ("hyp.de", "ref.de", "none")]:
    h, r = lines(hyp), lines(ref)
    for lc in (False, True):
        bleu = BLEU(tokenize=tok, lowercase=lc)
        s = bleu.corpus_score(h, [r])
        opts = f"tok={tok},lc={int(lc)}"
        print(f"{hyp}\t{ref}\tbleu\t{opts}\t{s.score:.6f}\t{s.format()}|{bleu.get_signature()}")
        chrf = CHRF(lowercase=lc)
        c = chrf.corpus_score(h, [r])
        print(f"{hyp}\t{ref}\tchrf\tlc={int(lc)}\t{c.score:.6f}\t{chrf.get_signature()}")

# Two references per hypothesis (ref2.de: other translations of our own writing).
h, refs = lines("hyp.de"), [lines("ref.de"), lines("ref2.de")]
for lc in (False, True):
    bleu = BLEU(tokenize="13a", lowercase=lc)
    s = bleu.corpus_score(h, refs)
    print(f"hyp.de\tref.de,ref2.de\tbleu\ttok=13a,lc={int(lc)}\t{s.score:.6f}\t{s.format()}|{bleu.get_signature()}")
    chrf = CHRF(lowercase=lc)
    c = chrf.corpus_score(h, refs)
    print(f"hyp.de\tref.de,ref2.de\tchrf\tlc={int(lc)}\t{c.score:.6f}\t{chrf.get_signature()}")

# Tokenizer cases: tokenize_cases.txt -> tokenized.tsv (input, 13a, zh).
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh
t13a, tzh = Tokenizer13a(), TokenizerZh()
with open("tokenized.tsv", "w", encoding="utf-8") as out:
    for line in lines("tokenize_cases.txt"):
        cells = [line, t13a(line.rstrip()), tzh(line.rstrip())]
        out.write("\t".join(c.replace("\\", "\\\\").replace("\t", "\\t") for c in cells) + "\n")
