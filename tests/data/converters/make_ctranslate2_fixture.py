"""Builds the CTranslate2 fixtures the converter tests check against: CTranslate2's own converter
run on the committed Hugging Face fixtures (fp32 Marian; int8 M2M-100), a copy of the Marian
directory whose position table is removed so CTranslate2 computes its own sinusoid, and an Argos
Translate package (.argosmodel: a zip of model/, sentencepiece.model, metadata.json). For each,
what CTranslate2 computes: greedy and beam tokens, their scores, and teacher-forced log-probs
(score_batch) of the greedy output, all with compute_type float32 (int8 weights dequantized), so
a libmt fp32 conversion must match them, and min_decoding_length 0 (CTranslate2's default of 1
masks </s> at the first step before the softmax, which libmt does not). Rebuild (V: the venv of make_marian_fixture.py, with
ctranslate2==4.8.5):

    V/bin/python tests/data/converters/make_ctranslate2_fixture.py
"""

import json
import pathlib
import shutil
import struct
import sys
import zipfile

import ctranslate2
import sentencepiece as spm

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "bench" / "converters"))
from ct2_convert_hf import Converter  # noqa: E402  (CTranslate2 4.8 with transformers 4.45)

MAX_DECODING_LENGTH = 30
MARIAN_TEXTS = ["the small dog runs near the river", "a woman and two children", ">>fra<< the man sees a tree",
                "x y z qq inconnu", "a"]
M2M_CASES = [("en", "fr", "the small dog runs near the river"), ("en", "de", "the man plays in the water"),
             ("de", "en", "der kleine hund lauft"), ("fr", "de", "x y z qq inconnu"), ("en", "fr", "a")]


def read_model_bin(path):
    """(header, [(name, rank/dims/dtype/bytes record)], aliases): model.bin as CTranslate2 writes it."""
    data = path.read_bytes()
    offset = 0

    def take(fmt):
        nonlocal offset
        value = struct.unpack_from("<" + fmt, data, offset)
        offset += struct.calcsize("<" + fmt)
        return value[0]

    def string():
        nonlocal offset
        length = take("H")
        text = data[offset:offset + length - 1].decode()
        offset += length
        return text

    version, name, revision = take("I"), string(), take("I")
    variables = []
    for _ in range(take("I")):
        start = offset
        variable = string()
        rank = take("B")
        offset += 4 * rank + 1
        size = take("I")
        offset += size
        variables.append((variable, data[start:offset]))
    aliases = [(string(), string()) for _ in range(take("I"))]
    return (version, name, revision), variables, aliases


def write_model_bin(path, header, variables, aliases):
    def string(text):
        raw = text.encode()
        return struct.pack("<H", len(raw) + 1) + raw + b"\0"

    version, name, revision = header
    out = [struct.pack("<I", version), string(name), struct.pack("<I", revision), struct.pack("<I", len(variables))]
    out += [record for _, record in variables]
    out.append(struct.pack("<I", len(aliases)))
    out += [string(a) + string(b) for a, b in aliases]
    path.write_bytes(b"".join(out))


def record(directory, cases, spm_path, source_eos):
    """What CTranslate2 computes on `cases` (text, target prefix tokens or None)."""
    translator = ctranslate2.Translator(str(directory), device="cpu", compute_type="float32", inter_threads=1,
                                        intra_threads=1)
    sp = spm.SentencePieceProcessor(model_file=str(spm_path))
    out = []
    for text, prefix_tokens, source_prefix in cases:
        tokens = list(source_prefix) + sp.encode(text, out_type=str) + (["</s>"] if source_eos else [])
        prefix = [prefix_tokens] if prefix_tokens else None
        greedy = translator.translate_batch([tokens], prefix, beam_size=1, max_decoding_length=MAX_DECODING_LENGTH,
                                            min_decoding_length=0, return_scores=True)[0]
        beam = translator.translate_batch([tokens], prefix, beam_size=4, num_hypotheses=2,
                                          max_decoding_length=MAX_DECODING_LENGTH, min_decoding_length=0,
                                          return_scores=True)[0]
        # CTranslate2's defaults too (min_decoding_length 1): libmt's min_decoding_length=1 is the same rule.
        default_greedy = translator.translate_batch([tokens], prefix, beam_size=1, max_decoding_length=MAX_DECODING_LENGTH,
                                                    return_scores=True)[0]
        default_beam = translator.translate_batch([tokens], prefix, beam_size=4, max_decoding_length=MAX_DECODING_LENGTH,
                                                  return_scores=True)[0]
        target = greedy.hypotheses[0]
        scored = translator.score_batch([tokens], [target])[0]
        full_text = " ".join(list(source_prefix) + [text]) if source_prefix and prefix_tokens is None else text
        out.append({"text": full_text, "source_tokens": tokens, "target_prefix": prefix_tokens or [],
                    "greedy": target, "greedy_score": greedy.scores[0],
                    "greedy_text": sp.decode([t for t in target if t not in (prefix_tokens or [])]),
                    "beam": beam.hypotheses, "beam_scores": beam.scores,
                    "default_greedy": default_greedy.hypotheses[0], "default_greedy_score": default_greedy.scores[0],
                    "default_beam": default_beam.hypotheses[0], "default_beam_score": default_beam.scores[0],
                    "forced_tokens": scored.tokens, "forced_log_probs": [round(x, 7) for x in scored.log_probs]})
    return out


def save(name, cases, **extra):
    expected = {"ctranslate2": ctranslate2.__version__, "max_decoding_length": MAX_DECODING_LENGTH, **extra,
                "cases": cases}
    (HERE / name / "expected.json").write_text(json.dumps(expected, ensure_ascii=False, indent=0))
    for c in cases:
        print(name, c["source_tokens"][:6], c["greedy"], c["beam_scores"])


def fresh(name):
    out = HERE / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    return out


def main():
    marian_hf = HERE / "marian-shared" / "hf"
    # 1. Marian (OPUS-MT) through CTranslate2's Transformers converter: CTranslate2 drops <pad> and
    # starts decoding from a zero embedding. Callers write the </s> MarianTokenizer would add.
    out = fresh("ct2-marian")
    Converter(str(marian_hf)).convert(str(out / "model"), quantization="float32", force=True)
    shutil.copy(marian_hf / "source.spm", out / "source.spm")
    shutil.copy(marian_hf / "target.spm", out / "target.spm")
    # A leading >>xx<< is one token, as MarianTokenizer (and libmt) read it.
    cases = [(t.split(" ", 1)[1], None, [t.split(" ", 1)[0]]) if t.startswith(">>") else (t, None, [])
             for t in MARIAN_TEXTS]
    save("ct2-marian", record(out / "model", cases, marian_hf / "source.spm", True), source_eos=True)

    # 2. The same model without a stored position table: CTranslate2 computes its sinusoid.
    out = fresh("ct2-computed-positions")
    shutil.copytree(HERE / "ct2-marian" / "model", out / "model")
    header, variables, aliases = read_model_bin(out / "model" / "model.bin")
    variables = [v for v in variables if "position_encodings" not in v[0]]
    aliases = [a for a in aliases if "position_encodings" not in a[0] and "position_encodings" not in a[1]]
    write_model_bin(out / "model" / "model.bin", header, variables, aliases)
    shutil.copy(marian_hf / "source.spm", out / "source.spm")
    shutil.copy(marian_hf / "target.spm", out / "target.spm")
    save("ct2-computed-positions", record(out / "model", cases, marian_hf / "source.spm", True), source_eos=True)

    # 3. M2M-100 quantized to int8 by CTranslate2, packaged as Argos Translate ships models.
    m2m_hf = HERE / "m2m100" / "hf"
    out = fresh("ct2-m2m100-argos")
    package = out / "package"
    Converter(str(m2m_hf)).convert(str(package / "model"), quantization="int8", force=True)
    shutil.copy(m2m_hf / "sentencepiece.bpe.model", package / "sentencepiece.model")
    (package / "metadata.json").write_text(json.dumps({
        "package_version": "1.0", "argos_version": "1.9", "from_code": "en", "from_name": "English", "to_code": "fr",
        "to_name": "French", "type": "translate"}, indent=2))
    cases = [(text, [f"__{tgt}__"], [f"__{src}__"]) for src, tgt, text in M2M_CASES]
    results = record(package / "model", cases, package / "sentencepiece.model", True)
    with zipfile.ZipFile(out / "translate-en_fr-1_0.argosmodel", "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(package.rglob("*")):
            if path.is_file():
                archive.write(path, "translate-en_fr-1_0/" + str(path.relative_to(package)))
    shutil.rmtree(package)
    save("ct2-m2m100-argos", results, source_eos=True)


if __name__ == "__main__":
    main()
