"""Writes paragraphs.en.expected: what the reference splitter makes of each
paragraph of paragraphs.en (one per line), with libmt's own English prefix
list. Run once when paragraphs.en changes, and commit the result:

    python3 -m venv /tmp/ssplit && /tmp/ssplit/bin/pip install sentence-splitter==1.4
    /tmp/ssplit/bin/python tests/data/ssplit/make_expected.py

sentence-splitter (PyPI, LGPL-3) is the Moses splitter in Python; it is only
run here to make the expected file, never shipped or linked. Output: each
paragraph's sentences, one per line, then an empty line.
"""
import pathlib

from sentence_splitter import SentenceSplitter

here = pathlib.Path(__file__).resolve().parent
prefixes = here.parents[2] / "lib" / "data" / "nonbreaking_prefixes" / "en.txt"
splitter = SentenceSplitter("en", non_breaking_prefix_file=str(prefixes))
out = []
for paragraph in (here / "paragraphs.en").read_text(encoding="utf-8").split("\n"):
    if not paragraph:
        continue
    out.extend(splitter.split(paragraph))
    out.append("")
(here / "paragraphs.en.expected").write_text("\n".join(out) + "\n", encoding="utf-8")
