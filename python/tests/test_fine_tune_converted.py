"""mt_train --init on converted models (the converters' test fixtures): a
Marian model with language tokens (--tgt-lang picks >>deu<<), a Marian model
with separate source and target vocabularies, and an M2M-100 model (source
and target language tokens). Each fine-tunes on our own corpus, its dev loss
lower after a few updates than at step 0, and the file it writes keeps the
converted model's config, vocabularies and language tokens and translates.
As `mt_train --vocab` for a new model, a converted vocabulary is refused.
Needs mt_train beside mt_translate (MT_TRANSLATE, as the other CLI tests)."""

import os
import pathlib
import subprocess

import pytest

pytest.importorskip("numpy")  # the converters read checkpoints with numpy

import libmt  # noqa: E402
from libmt import convert  # noqa: E402

from conftest import DATA  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "converters"
CASES = {
    "marian-shared": ["--tgt-lang", "deu"],
    "marian-separate": [],
    "m2m100": ["--src-lang", "en", "--tgt-lang", "de"],
}


def corpus(tmp_path):
    """The first 200 pairs of tests/data/text/corpus.txt (English and German alternating), dev its first 20."""
    lines = (DATA / "text" / "corpus.txt").read_text(encoding="utf-8").split("\n")[:400]
    files = {}
    for name, part in (("train", slice(0, 400)), ("dev", slice(0, 40))):
        for side, offset in (("en", 0), ("de", 1)):
            path = tmp_path / ("%s.%s" % (name, side))
            path.write_text("\n".join(lines[part][offset::2]) + "\n", encoding="utf-8")
            files[name + "." + side] = str(path)
    return files


def dev_losses(run):
    rows = (run / "dev.tsv").read_text().split("\n")[1:-1]
    return [float(row.split("\t")[2]) for row in rows]


@pytest.fixture
def mt_train(mt_translate):
    """mt_train beside mt_translate; skips (fails under MT_REQUIRE_MT_TRANSLATE=1) without it."""
    path = pathlib.Path(mt_translate).parent / "mt_train"
    if not os.access(path, os.X_OK):
        if os.environ.get("MT_REQUIRE_MT_TRANSLATE") == "1":
            pytest.fail("no mt_train beside %s" % mt_translate)
        pytest.skip("no mt_train beside %s (built without the trainer)" % mt_translate)
    return path


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_converted_model_fine_tunes(name, mt_train, tmp_path):
    converted = tmp_path / "converted.mtm"
    convert.convert("transformers", FIXTURES / name / "hf", converted)
    files = corpus(tmp_path)
    run = tmp_path / "run"
    result = subprocess.run(
        [str(mt_train), "--init", str(converted), "--train-src", files["train.en"], "--train-tgt", files["train.de"],
         "--dev-src", files["dev.en"], "--dev-ref", files["dev.de"], "--out", str(run), "--max-steps", "12",
         "--lr", "1e-3", "--warmup", "4", "--max-tokens", "1000", "--threads", "2"] + CASES[name],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    losses = dev_losses(run)
    assert len(losses) >= 2 and losses[-1] < losses[0] - 0.1, losses  # step 0, then the fine-tuned epochs

    before, after = libmt.Model(converted), libmt.Model(run / "model_last.mtm")
    assert after.config == before.config
    assert libmt.language_tokens(after) == libmt.language_tokens(before)
    texts = ["A man is walking along the river.", "Two children look at a small boat."]
    for text in texts:
        assert after.vocabulary.encode(text) == before.vocabulary.encode(text)
    options = {"target_language": CASES[name][-1]} if CASES[name] else {}
    if name == "m2m100":
        options["source_language"] = "en"
    translations = libmt.Translator(after).translate(texts, **options)
    assert len(translations) == 2


def test_a_converted_vocabulary_is_refused_as_mt_train_vocab(mt_train, tmp_path):
    """--vocab takes a vocabulary for a new model: a converted model's maps its pieces to ids of its own, so
    mt_train refuses it before any work and points to --init."""
    converted = tmp_path / "converted.mtm"
    convert.convert("transformers", FIXTURES / "marian-shared" / "hf", converted)
    files = corpus(tmp_path)
    run = tmp_path / "run"
    result = subprocess.run(
        [str(mt_train), "--vocab", str(converted), "--train-src", files["train.en"], "--train-tgt",
         files["train.de"], "--dev-src", files["dev.en"], "--dev-ref", files["dev.de"], "--out", str(run),
         "--max-steps", "2"], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "a converted model's vocabulary" in result.stderr and "--init" in result.stderr, result.stderr
    assert not run.exists()
