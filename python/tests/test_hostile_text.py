"""Text no caller should send, sent anyway: invalid UTF-8 (bytes and str),
NUL, 100,000-byte lines, empty input. Each gets a translation or a clear error."""

import pathlib

import pytest

import libmt

from conftest import SHIPPED


def test_empty_inputs(de_translator):
    assert de_translator.translate([]) == []
    assert de_translator.translate_batch([]) == []
    assert list(de_translator.translate_iterable([])) == []
    assert de_translator.translate(["", " ", "\t"]) == ["", "", ""]
    empty = de_translator.translate_batch([[]])[0]
    assert empty.ids == [[]] and empty.scores == [0.0] and empty.log_probs == [0.0]


def test_invalid_utf8_bytes_read_as_replacement_characters(de_translator):
    bad = [b"A dog\xff runs.", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\x80" * 50]
    out = de_translator.translate(bad)
    assert len(out) == len(bad)
    # Tokenized as SentencePiece reads invalid bytes, the same as Vocabulary.encode.
    vocabulary = de_translator.model.vocabulary
    assert de_translator.translate_batch([vocabulary.encode(b) for b in bad]) == \
        de_translator.translate(bad, return_scores=True)
    for text in out:
        text.encode("utf-8")  # valid UTF-8 out


def test_str_with_lone_surrogates(de_translator):
    # A file read with errors="surrogateescape" gives back its bytes.
    escaped = b"A dog\xff runs.".decode("utf-8", "surrogateescape")
    assert de_translator.translate([escaped]) == de_translator.translate([b"A dog\xff runs."])
    out = de_translator.translate(["A dog \ud800 runs."])
    assert len(out) == 1
    out[0].encode("utf-8")


def test_bytearray_and_memoryview(de_translator):
    text = "Two dogs play in the snow."
    expected = de_translator.translate([text])
    assert de_translator.translate([bytearray(text.encode())]) == expected
    assert de_translator.translate([memoryview(text.encode())]) == expected


def test_nul_and_control_characters(de_translator):
    out = de_translator.translate(["A dog\x00 runs.", "\x00", "\x01\x02\x1b[31m", "a\u2028b\u2029c\x85d"])
    assert len(out) == 4
    for text in out:
        assert "\n" not in text and "\r" not in text


def test_long_line_is_an_error_unless_truncated(de_translator):
    line = "A dog runs on the beach. " * 4000  # 100,000 bytes
    assert len(line.encode()) == 100000
    with pytest.raises(ValueError, match="max_text_bytes"):
        de_translator.translate(["A dog.", line])
    result = de_translator.translate(["A dog.", line], truncate=True, return_scores=True)
    assert [r.truncated for r in result] == [False, True]
    assert result[0].hypotheses == de_translator.translate(["A dog."])


def test_many_tokens_within_the_byte_limit(de_model):
    translator = libmt.Translator(de_model, max_source_length=20)
    line = "dog " * 200
    with pytest.raises(ValueError, match="max_source_length|tokens"):
        translator.translate([line])
    assert translator.translate([line], truncate=True, return_scores=True)[0].truncated


def test_error_names_the_batch_of_a_long_list(de_model):
    translator = libmt.Translator(de_model, max_batch_size=2)
    sources = ["A dog."] * 5 + ["x" * 5000]
    with pytest.raises(ValueError, match=r"sources\[4:6\]"):
        translator.translate(sources)


def test_a_failed_call_leaves_the_translator_usable(de_translator):
    with pytest.raises(ValueError):
        de_translator.translate(["y" * 5000])
    assert de_translator.translate(["Two dogs play in the snow."]) == ["Zwei Hunde spielen im Schnee."]


def test_model_from_a_strided_buffer(de_model):
    data = SHIPPED["de-tiny-fp32"].read_bytes()
    spaced = bytearray(2 * len(data))
    spaced[::2] = data
    model = libmt.Model(memoryview(spaced)[::2])  # the bytes the view shows, not len(data) bytes from its start
    assert libmt.Translator(model).translate(["A dog."]) == libmt.Translator(de_model).translate(["A dog."])
    with pytest.raises(libmt.ModelError):
        libmt.Model(memoryview(data)[::-1])


def test_paths_with_a_nul_are_refused(de_model, tmp_path):
    # The C library would stop at the NUL and use another file, as open() refuses to.
    model_path = str(SHIPPED["de-tiny-fp32"]) + "\0x"
    out = str(tmp_path / "out.mtm")
    writer = libmt.ModelWriter.from_model(de_model)
    for call in (lambda: libmt.Model(model_path), lambda: libmt.Translator(model_path),
                 lambda: de_model.save(out + "\0.bak"), lambda: writer.write(out + "\0.bak"),
                 lambda: libmt.Model(pathlib.Path(model_path))):
        with pytest.raises(ValueError, match="embedded null byte"):
            call()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("words", [["A", "\ud800", "dog", "runs."], ["A", "\udc80", "dog", "\ud801", "runs."]])
def test_offsets_in_a_str_with_lone_surrogates(de_model, words):
    # A lone surrogate is one index of the str, whatever its UTF-8 bytes ("surrogatepass": three).
    translator = libmt.Translator(de_model, alignments=True)
    source = " ".join(words)
    ranges = translator.translate([source], return_scores=True)[0].source_ranges
    assert "dog" in [source[begin:end].strip() for begin, end in ranges]
    assert ranges[-1] == (len(source), len(source))  # EOS, after the text
    text = source + " Two cats run."
    expected = [source, "Two cats run."]
    assert [text[a:b] for (a, b), _ in libmt.split_sentences(text)] == expected
    assert [text[a:b] for (a, b), *_ in translator.translate_paragraphs(text).sentences] == expected
