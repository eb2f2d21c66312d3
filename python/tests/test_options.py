"""Every option is checked, and a bad one raises ValueError naming it (or
TypeError for a wrong type), before anything is translated."""

import math

import pytest

import libmt

from conftest import SHIPPED


@pytest.mark.parametrize("option, value, message", [
    ("device", "tpu", "device = 'tpu': must be 'cpu' or 'cuda'"),
    ("thread_split", "rows", "thread_split = 'rows'"),
    ("num_threads", 0, "num_threads"),
    ("num_threads", 100000, "num_threads"),
    ("max_batch_size", 0, "max_batch_size"),
    ("max_beam_size", 0, "max_beam_size"),
    ("max_source_length", 0, "max_source_length = 0"),
    ("max_source_length", 1024, "max_source_length = 1024"),  # the model's max_positions is 1024, EOS needs one
    ("max_target_length", 0, "max_target_length = 0"),
    ("max_target_length", 1025, "max_target_length = 1025"),
    ("max_text_bytes", 0, "max_text_bytes"),
])
def test_translator_option(de_model, option, value, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        libmt.Translator(de_model, **{option: value})


@pytest.mark.parametrize("option, value", [
    ("beam_size", 0), ("beam_size", 5),  # the translator's max_beam_size is 4
    ("num_hypotheses", 0), ("num_hypotheses", 2),  # greedy: beam_size 1
    ("length_penalty", -0.5), ("length_penalty", math.nan), ("length_penalty", math.inf), ("length_penalty", 11.0),
    ("max_decoding_length", -1), ("max_decoding_length", 100000),
    ("max_length_ratio", -1.0), ("max_length_ratio", math.nan),
    ("max_length_offset", -1),
    ("min_decoding_length", -1), ("min_decoding_length", 100000),
])
@pytest.mark.parametrize("method", ["translate", "translate_batch"])
def test_translate_option(de_translator, option, value, method):
    source = ["A dog."] if method == "translate" else [[5, 6, 7]]
    with pytest.raises(ValueError, match="translate option " + option):
        getattr(de_translator, method)(source, **{option: value})


def test_options_in_range_are_accepted(de_translator):
    results = de_translator.translate(["A dog runs on the beach."], beam_size=4, num_hypotheses=4, length_penalty=0.0,
                                      max_decoding_length=5, min_decoding_length=2, max_length_ratio=1.5,
                                      max_length_offset=1, return_scores=True)
    assert len(results[0].hypotheses) == 4
    for ids in results[0].ids:
        assert 2 <= len(ids) <= 5  # EOS counts towards the length; a hypothesis cut at 5 has none


def test_min_and_max_decoding_length_shape_the_output(de_translator):
    long = de_translator.translate(["A dog."], min_decoding_length=12, return_scores=True)[0]
    assert len(long.ids[0]) >= 11  # EOS allowed from the 12th token on
    short = de_translator.translate(["A man in a blue shirt is riding a bicycle down the street."],
                                    max_decoding_length=3, return_scores=True)[0]
    assert len(short.ids[0]) <= 3


@pytest.mark.parametrize("call", [
    lambda t: t.translate(["x"], beam_size="4"),
    lambda t: t.translate(["x"], beam_size=2.5),
    lambda t: t.translate(["x"], truncate="yes"),
    lambda t: t.translate([1, 2]),
    lambda t: t.translate(["x"], no_such_option=1),
    lambda t: t.translate_batch([["a"]]),
    lambda t: t.translate_batch([[-1 + 2 ** 40]]),
    lambda t: libmt.Translator(t.model, num_threads="2"),
    lambda t: libmt.Translator(t.model, 4),  # options are keywords only
    lambda t: libmt.Translator(12),
    lambda t: t.translate(["x"], alternatives=2.5),
    lambda t: t.translate(["x"], no_repeat_ngram_size=1.5),
    lambda t: t.translate(["x"], repetition_penalty="2"),
    lambda t: t.translate_batch([[5]], prefixes=["abc"]),
    lambda t: t.translate_batch([[5]], prefixes=[5]),
    lambda t: libmt.Translator(t.model, max_source_length=2.5),
    lambda t: libmt.Translator(t.model, max_target_length="9"),
    lambda t: t.translate_paragraphs("A dog.", prefix_language=5),
    lambda t: t.translate_paragraphs("A dog.", format=5),
])
def test_wrong_types(de_translator, call):
    with pytest.raises(TypeError):
        call(de_translator)


@pytest.mark.parametrize("call, message", [
    (lambda t: t.translate(["x"], alternatives=2.5), "alternatives: expected int, got float"),
    (lambda t: t.translate_batch([[5]], prefixes=["abc"]), r"prefixes\[0\]: expected a list of token ids"),
    (lambda t: libmt.Translator(t.model, max_source_length=2.5), "max_source_length: expected int"),
    (lambda t: t.translate_paragraphs("A dog.", format=5), "format: expected str, got int"),
])
def test_wrong_types_name_the_option(de_translator, call, message):
    with pytest.raises(TypeError, match=message):
        call(de_translator)


@pytest.mark.parametrize("method, sources, prefixes", [
    ("translate", ["a"], ["x", "y"]),
    ("translate", [], [None]),
    ("translate_batch", [[5]], [[6], [7]]),
])
def test_more_prefixes_than_sources(de_translator, method, sources, prefixes):
    with pytest.raises(ValueError, match="prefixes: %d given for %d sources" % (len(prefixes), len(sources))):
        getattr(de_translator, method)(sources, prefixes=prefixes)


@pytest.mark.parametrize("method", ["translate", "translate_batch"])
def test_one_string_instead_of_a_list(de_translator, method):
    with pytest.raises(TypeError, match=r"takes a list of sentences"):
        getattr(de_translator, method)("A dog.")


def test_source_ids_out_of_range(de_translator):
    with pytest.raises(ValueError, match="8000"):
        de_translator.translate_batch([[5, 8000]])
    with pytest.raises(ValueError):
        de_translator.translate_batch([[-1]])


def test_translate_iterable_options(de_translator):
    with pytest.raises(ValueError, match=r"batch_size = 0: must be in \[1, 16\]"):
        list(de_translator.translate_iterable(["a"], batch_size=0))
    with pytest.raises(ValueError, match=r"batch_size = 17"):
        list(de_translator.translate_iterable(["a"], batch_size=17))
    with pytest.raises(ValueError, match="read_batches"):
        list(de_translator.translate_iterable(["a"], read_batches=0))
    with pytest.raises(ValueError, match="translate option beam_size"):
        list(de_translator.translate_iterable(["a"], beam_size=9))


def test_translate_file_refuses_nbest(de_translator, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("A dog.\n")
    for option in ("return_scores", "num_hypotheses"):
        with pytest.raises(TypeError, match=option):
            de_translator.translate_file(src, tmp_path / "out.txt", **{option: 2})


def test_cuda_without_cuda_is_a_clear_error():
    try:
        translator = libmt.Translator(SHIPPED["de-tiny-fp32"], device="cuda")
    except ValueError as e:
        # Built without CUDA, or no GPU: the message says which.
        assert "device = 'cuda'" in str(e) and "CUDA" in str(e)
    else:
        assert translator.device == "cuda"
        assert translator.translate(["A dog."]) == libmt.Translator(SHIPPED["de-tiny-fp32"]).translate(["A dog."])


def test_properties(de_model):
    t = libmt.Translator(de_model, max_batch_size=3, max_source_length=100, max_target_length=50, max_beam_size=2,
                         max_text_bytes=1000)
    assert (t.max_batch_size, t.max_source_length, t.max_target_length, t.max_beam_size, t.max_text_bytes) == \
        (3, 100, 50, 2, 1000)
    assert t.device == "cpu" and t.num_threads == 1 and t.memory_size > 0
    assert isinstance(t.kernel_isa, str) and t.kernel_isa
    assert "libmt.Translator" in repr(t)
