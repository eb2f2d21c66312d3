"""libmt.ray on a local Ray cluster of 2 CPUs: a file translated through
Ray equals mt_translate's output byte for byte, a dataset keeps its order and
columns, an actor that dies is restarted and its block translated again
(every line exactly once), a block that always kills its actor fails the
job instead of hanging it, and bad options fail before anything runs.
Skips without Ray Data (pip install 'libmt[ray]'); MT_REQUIRE_RAY=1 (CI)
makes that a failure."""

import io
import os
import pathlib
import subprocess
import sys

import pytest

try:
    import ray
    import ray.data
    import libmt.ray
except ImportError as error:
    if os.environ.get("MT_REQUIRE_RAY") == "1":
        raise
    pytest.skip("Ray Data is not installed (pip install 'libmt[ray]'): %s" % error, allow_module_level=True)

import libmt

from conftest import DATA, ROOT, SHIPPED, read_lines

MODEL = str(SHIPPED["de-tiny-fp32"])
MULTI30K_TEST = ROOT.parent / "shared" / "data" / "multi30k" / "test_2016_flickr.en"


@pytest.fixture(scope="module", autouse=True)
def local_cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # The test module's classes go to the actors by value (they are not importable there).
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def corpus(tmp_path):
    """The Multi30k test set when ../shared has it, else the committed
    sentences; then the lines a corpus has: CR LF, an empty line, invalid
    UTF-8, no newline at the end."""
    lines = (MULTI30K_TEST if MULTI30K_TEST.is_file() else DATA / "shipped_sentences.en").read_bytes()
    path = tmp_path / "corpus.en"
    path.write_bytes(lines + b"Two dogs run.\r\n\nA caf\xe9 \xff on a street.\nA man.")
    return path


def reference(mt_translate, source, *args):
    with open(source, "rb") as f:
        return subprocess.run([mt_translate, "-m", MODEL, *args], stdin=f, capture_output=True, check=True).stdout


def test_file_equals_mt_translate(mt_translate, tmp_path):
    source = corpus(tmp_path)
    target = tmp_path / "out.de"
    stats = libmt.ray.translate_file(source, target, MODEL, beam_size=1, block_size=64, concurrency=2)
    expected = reference(mt_translate, source, "--beam", "1")
    assert target.read_bytes() == expected
    assert stats.lines == expected.count(b"\n")
    # Beam search (mt_translate's default, beam 4), several windows, streams in and out.
    sentences = (DATA / "shipped_sentences.en").read_bytes()
    out = io.BytesIO()
    stats = libmt.ray.translate_file(io.BytesIO(sentences), out, MODEL, beam_size=4, block_size=8, window=16)
    assert out.getvalue() == reference(mt_translate, DATA / "shipped_sentences.en")
    assert stats.lines == sentences.count(b"\n")


def test_dataset_keeps_order_and_columns(de_translator, sentences):
    rows = [{"id": i, "text": s} for i, s in enumerate(sentences)]
    translated = libmt.ray.translate_dataset(ray.data.from_items(rows), MODEL, block_size=5,
                                             output_column="de", concurrency=2).take_all()
    assert [row["id"] for row in translated] == list(range(len(sentences)))
    assert [row["text"] for row in translated] == sentences
    assert [row["de"] for row in translated] == de_translator.translate(sentences)


def test_progress_on_stderr(tmp_path, capsys):
    libmt.ray.translate_file(DATA / "shipped_sentences.en", tmp_path / "out.de", MODEL, progress=True)
    count = len(read_lines(DATA / "shipped_sentences.en"))
    assert "%d/%d lines" % (count, count) in capsys.readouterr().err


class CrashOnce(libmt.ray.Translate):
    """Kills its process on the first block any actor is given (a flag file
    says it happened); Ray restarts the actor and gives it the block again."""
    flag = ""

    def __call__(self, block):
        try:
            os.close(os.open(self.flag, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return super().__call__(block)
        os._exit(1)


class CrashAlways(libmt.ray.Translate):
    """A block that kills every actor it reaches, as a sentence that crashed the process would."""

    def __call__(self, block):
        if "POISON" in block.column("text").to_pylist():
            os._exit(1)
        return super().__call__(block)


def test_dead_actor_is_restarted_and_no_line_is_lost(mt_translate, tmp_path, monkeypatch):
    source = corpus(tmp_path)
    monkeypatch.setattr(CrashOnce, "flag", str(tmp_path / "crashed"))
    monkeypatch.setattr(libmt.ray, "Translate", CrashOnce)
    target = tmp_path / "out.de"
    libmt.ray.translate_file(source, target, MODEL, beam_size=1, block_size=64, concurrency=2)
    assert (tmp_path / "crashed").exists()
    assert target.read_bytes() == reference(mt_translate, source, "--beam", "1")


def test_block_that_always_kills_its_actor_fails_the_job(monkeypatch):
    monkeypatch.setattr(libmt.ray, "Translate", CrashAlways)
    dataset = ray.data.from_items([{"text": s} for s in ["A dog.", "POISON", "A cat."]])
    with pytest.raises(Exception) as error:
        libmt.ray.translate_dataset(dataset, MODEL, block_size=1, concurrency=1, retries=1).take_all()
    assert "died" in str(error.value).lower() or "actor" in str(error.value).lower()


def test_bad_options_fail_before_anything_runs(tmp_path):
    empty = ray.data.from_items([{"text": "A dog."}])
    with pytest.raises(FileNotFoundError):
        libmt.ray.translate_dataset(empty, tmp_path / "missing.mtm")
    corrupt = tmp_path / "corrupt.mtm"
    corrupt.write_bytes(pathlib.Path(MODEL).read_bytes()[:1000])
    with pytest.raises(libmt.ModelError):
        libmt.ray.translate_dataset(empty, corrupt)
    with pytest.raises(TypeError, match="unknown option 'beam'"):
        libmt.ray.translate_dataset(empty, MODEL, beam=4)
    with pytest.raises(TypeError, match="on_token"):
        libmt.ray.translate_dataset(empty, MODEL, on_token=print)
    with pytest.raises(TypeError, match="unknown translator option 'threads'"):
        libmt.ray.translate_dataset(empty, MODEL, translator_options={"threads": 2})
    with pytest.raises(ValueError, match="beam_size"):
        libmt.ray.translate_dataset(empty, MODEL, beam_size=9)
    with pytest.raises(ValueError, match="output_column"):
        libmt.ray.translate_dataset(empty, MODEL, output_column="text")
    with pytest.raises(ValueError, match="concurrency"):
        libmt.ray.translate_dataset(empty, MODEL, concurrency=0)
    with pytest.raises(FileNotFoundError):
        libmt.ray.translate_file(tmp_path / "missing.en", tmp_path / "out.de", MODEL)
    assert not (tmp_path / "out.de").exists()
    with pytest.raises(ValueError, match="window"):
        libmt.ray.translate_file(io.BytesIO(b"A dog.\n"), io.BytesIO(), MODEL, window=10, block_size=20)
    # A column the dataset lacks is found by the actor, which names it.
    with pytest.raises(Exception, match="no column 'sentence'"):
        libmt.ray.translate_dataset(empty, MODEL, column="sentence").take_all()
