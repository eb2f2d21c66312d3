"""translate_iterable keeps the input order whatever the sorting inside;
translate_file writes one line per line, shows progress only on request or
on a terminal, and Ctrl-C stops it with the lines done so far on disk."""

import _thread
import io
import random
import signal
import threading

import pytest

import libmt

from conftest import read_lines


def test_iterable_order_and_laziness(de_translator, sentences):
    shuffled = list(sentences) * 3
    random.Random(7).shuffle(shuffled)
    expected = de_translator.translate(shuffled)
    assert list(de_translator.translate_iterable(iter(shuffled), batch_size=4, read_batches=3)) == expected
    assert list(de_translator.translate_iterable(shuffled, batch_size=1, read_batches=1)) == expected
    # A generator is read lazily: the first result comes before the input ends.
    read = []

    def source():
        for s in shuffled:
            read.append(s)
            yield s

    first = next(de_translator.translate_iterable(source(), batch_size=2, read_batches=2))
    assert first == expected[0] and len(read) == 4


def test_iterable_with_scores(de_translator, sentences):
    results = list(de_translator.translate_iterable(sentences[:6], beam_size=2, num_hypotheses=2))
    assert [len(r.hypotheses) for r in results] == [2] * 6
    assert [r.hypotheses[0] for r in results] == de_translator.translate(sentences[:6], beam_size=2)


def test_file_paths_and_streams(de_translator, tmp_path, sentences):
    src = tmp_path / "in.en"
    # CR LF endings, an empty line, no newline at the end.
    src.write_bytes(b"A dog runs.\r\n\r\nTwo dogs play in the snow.\nA man.")
    out = tmp_path / "out.de"
    stats = de_translator.translate_file(str(src), out, batch_size=2)
    expected = de_translator.translate(["A dog runs.", "", "Two dogs play in the snow.", "A man."])
    assert read_lines(out) == expected
    assert stats.lines == 4 and stats.source_bytes == len("A dog runs.Two dogs play in the snow.A man.")
    # Text streams in and out.
    text_out = io.StringIO()
    de_translator.translate_file(io.StringIO("A dog runs.\nA man.\n"), text_out)
    assert text_out.getvalue() == expected[0] + "\n" + expected[3] + "\n"
    # Binary streams.
    bytes_out = io.BytesIO()
    de_translator.translate_file(io.BytesIO(b"A man.\n"), bytes_out)
    assert bytes_out.getvalue() == (expected[3] + "\n").encode()


def test_file_progress(de_translator, tmp_path, capsys):
    src = tmp_path / "in.en"
    src.write_text("A dog.\n" * 40)
    de_translator.translate_file(src, tmp_path / "quiet.de")
    assert capsys.readouterr().err == ""  # stderr is not a terminal here
    de_translator.translate_file(src, tmp_path / "loud.de", progress=True)
    err = capsys.readouterr().err
    assert "40" in err and err.endswith("\n")


def test_file_errors(de_translator, tmp_path):
    with pytest.raises(FileNotFoundError):
        de_translator.translate_file(tmp_path / "missing.en", tmp_path / "out.de")
    src = tmp_path / "in.en"
    src.write_text("A dog.\n" + "x" * 5000 + "\n")
    with pytest.raises(ValueError, match="max_text_bytes"):
        de_translator.translate_file(src, tmp_path / "out.de")
    stats = de_translator.translate_file(src, tmp_path / "out.de", truncate=True)
    assert stats.lines == 2 and len(read_lines(tmp_path / "out.de")) == 2


class InterruptingSink(io.BytesIO):
    """A binary target that sends the main thread SIGINT (as Ctrl-C does)
    once `after` lines have been written: the interrupt lands mid-file
    whatever the machine's speed."""

    def __init__(self, after):
        super().__init__()
        self.after = after
        self.lines = 0

    def write(self, data):
        written = super().write(data)
        self.lines += data.count(b"\n")
        if self.lines == self.after:
            _thread.interrupt_main()
        return written


@pytest.fixture
def sigint_raises():
    """Python's own SIGINT handler for the test: a process started in the
    background of a non-interactive shell inherits SIGINT ignored, and then
    _thread.interrupt_main() does nothing (the CI rehearsal ran so)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("sigint_raises")
def test_keyboard_interrupt_stops_translate_file(de_model, tmp_path, sentences):
    translator = libmt.Translator(de_model, max_batch_size=4)
    src = tmp_path / "in.en"
    src.write_text("\n".join(sentences * 100) + "\n")  # 4,000 lines
    sink = InterruptingSink(after=100)
    with pytest.raises(KeyboardInterrupt):
        translator.translate_file(src, sink, batch_size=4, beam_size=4)
    done = sink.getvalue().decode().split("\n")[:-1]
    assert 100 <= len(done) < 4000
    expected = translator.translate(sentences, beam_size=4)
    assert done == (expected * 100)[:len(done)]  # what was written is right and in order
    assert translator.translate(sentences[:2]) == translator.translate(sentences[:2])  # still usable


@pytest.mark.usefixtures("sigint_raises")
def test_keyboard_interrupt_stops_a_long_translate(de_model, sentences):
    # The signal arrives while libmt translates without the GIL; the
    # translator checks for it between batches.
    translator = libmt.Translator(de_model, max_batch_size=4)
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            translator.translate(sentences * 100, beam_size=4)  # many seconds
    finally:
        timer.cancel()
    assert translator.translate(sentences[:2]) == translator.translate(sentences[:2])


def test_iterable_keeps_each_sentences_prefix(de_translator, sentences):
    # Sorted by length inside: the prefixes and on_token's indices still follow the caller's order.
    sources = ["A long sentence here.", "Hi."] + sentences[:9]
    prefixes = ["P%d" % i for i in range(len(sources) - 1)]  # the last has none
    expected = de_translator.translate(sources, prefixes=prefixes)
    events = []
    got = list(de_translator.translate_iterable(iter(sources), batch_size=2, read_batches=2, prefixes=prefixes,
                                                on_token=lambda sentence, step, *_: events.append((sentence, step))))
    assert got == expected
    assert [got[i].startswith("P%d" % i) for i in range(len(prefixes))] == [True] * len(prefixes)
    streamed = []
    de_translator.translate(sources, prefixes=prefixes, on_token=lambda s, step, *_: streamed.append((s, step)))
    assert sorted(events) == sorted(streamed)
    with pytest.raises(ValueError, match="prefixes: 3 given for 2 sources"):
        list(de_translator.translate_iterable(["a", "b"], prefixes=["x", "y", "z"]))


def test_file_keeps_each_lines_prefix(de_translator, tmp_path):
    src = tmp_path / "in.en"
    src.write_text("A long sentence here.\nHi.\n")
    de_translator.translate_file(src, tmp_path / "out.de", prefixes=["P0", "P1"])
    assert read_lines(tmp_path / "out.de") == de_translator.translate(["A long sentence here.", "Hi."],
                                                                      prefixes=["P0", "P1"])


@pytest.mark.parametrize("source", ["A dog.", b"A dog.", bytearray(b"A dog.")])
def test_iterable_refuses_one_string(de_translator, source):
    with pytest.raises(TypeError, match="not one"):
        list(de_translator.translate_iterable(source))


@pytest.mark.parametrize("options, error, message", [
    ({"beam_size": 99}, ValueError, "beam_size"),
    ({"alternatives": 2}, TypeError, "does not take alternatives"),
    ({"batch_size": 0}, ValueError, "batch_size = 0"),
    ({"read_batches": 0}, ValueError, "read_batches"),
    ({"prefixes": ["a", "b", "c"]}, ValueError, "prefixes: 3 given for 2 sources"),
    ({"no_such_option": 1}, TypeError, "no_such_option"),
    ({"target_language": "xx"}, ValueError, "language"),
])
def test_file_checks_options_before_touching_the_target(de_translator, tmp_path, options, error, message):
    src = tmp_path / "in.en"
    src.write_text("A dog.\nA man.\n")
    out = tmp_path / "out.de"
    out.write_text("precious\n")
    with pytest.raises(error, match=message):
        de_translator.translate_file(src, out, **options)
    assert out.read_text() == "precious\n"
