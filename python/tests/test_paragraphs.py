"""Translator.translate_paragraphs and libmt.split_sentences: the same
sentences and translations as the C++ API, offsets into the str given (or
the bytes), every byte between sentences kept."""
import pathlib

import pytest

import libmt

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "en-de-tiny.int8.mtm"
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def translator():
    return libmt.Translator(str(MODEL), max_batch_size=8)


def test_joined_sentences_translate_as_alone_gaps_kept(translator):
    sources = (DATA / "shipped_sentences.en").read_text(encoding="utf-8").splitlines()
    expected = (DATA / "shipped_sentences.de-tiny-int8-greedy").read_text(encoding="utf-8").splitlines()
    gaps = ["  "] + [("\n\n" if i % 5 == 4 else " \n "[i % 2:i % 2 + 2]) for i in range(len(sources) - 1)] + ["\n"]
    text = "".join(g + s for g, s in zip(gaps, sources)) + gaps[-1]
    # The pinned file's length limits (tests/test_shipped_models.cpp).
    result = translator.translate_paragraphs(text, mode="wrapped", max_length_ratio=2.0, max_length_offset=10)
    assert isinstance(result.text, str)
    assert len(result.sentences) == 40
    rebuilt = "".join(g + e for g, e in zip(gaps, expected)) + gaps[-1]
    assert result.text == rebuilt
    for i, s in enumerate(result.sentences):
        # str indices, though the German translations hold multi-byte characters.
        assert text[s.source[0]:s.source[1]] == sources[i]
        assert result.text[s.target[0]:s.target[1]] == expected[i]
        assert s.paragraph == i // 5 and s.pieces == 1 and not s.truncated


def test_bytes_in_bytes_out(translator):
    text = "Zwei Männer. A dog runs.".encode()
    result = translator.translate_paragraphs(text)
    assert isinstance(result.text, bytes)
    (first, second) = result.sentences
    assert text[first.source[0]:first.source[1]] == "Zwei Männer.".encode()
    assert result.text[second.target[0]:second.target[1]] == translator.translate(["A dog runs."])[0].encode()


def test_long_sentence_in_pieces(translator):
    text = "The " + " ".join(["dog runs in the park"] * 300) + "."
    result = translator.translate_paragraphs(text)
    assert len(result.sentences) == 1
    assert result.sentences[0].pieces > 1
    with pytest.raises(ValueError):
        translator.translate([text])


def test_split_sentences():
    text = "Dr. Müller kam. Er ging. 他来了。我走了！"
    spans = libmt.split_sentences(text, prefix_language="en")
    assert [text[b:e] for (b, e), _ in spans] == ["Dr. Müller kam.", "Er ging.", "他来了。", "我走了！"]
    raw = text.encode()
    byte_spans = libmt.split_sentences(raw, prefix_language="en")
    assert [raw[b:e].decode() for (b, e), _ in byte_spans] == [text[b:e] for (b, e), _ in spans]
    assert [t for (_, _), t in libmt.split_sentences("A b.\n\nC d.", mode="wrapped")] == [0, 1]
    assert len(libmt.split_sentences("Dr. Smith came.")) == 2  # no list: "Dr." ends a sentence
    assert len(libmt.split_sentences("Dr. Smith came.", prefixes="Dr\n")) == 1
    assert "e.g" in libmt.builtin_prefix_list("en")
    assert libmt.builtin_prefix_list("xx") == ""


def test_errors(translator):
    with pytest.raises(ValueError, match="mode"):
        translator.translate_paragraphs("A dog.", mode="paragraph")
    with pytest.raises(ValueError, match="give one or neither"):
        translator.translate_paragraphs("A dog.", prefixes="Dr", prefix_language="en")
    with pytest.raises(ValueError, match="there are"):
        libmt.split_sentences("A dog.", prefix_language="xx")
    with pytest.raises(ValueError, match="prefixes"):
        libmt.split_sentences("A dog.", prefixes=b"\xff")
    with pytest.raises(TypeError):
        translator.translate_paragraphs(42)
    with pytest.raises(ValueError, match="beam"):
        translator.translate_paragraphs("A dog.", beam_size=99)
    assert translator.translate_paragraphs("").text == ""
    assert translator.translate_paragraphs(" \n\n ").text == " \n\n "
