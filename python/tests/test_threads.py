"""Threads and object lifetimes: translators on threads share one Model and
give the serial results; a translator keeps its model alive."""

import gc
import threading
import weakref

import libmt

from conftest import SHIPPED


def run_threads(count, work):
    results = [None] * count
    errors = []

    def body(i):
        try:
            results[i] = work(i)
        except BaseException as e:  # reported by the test below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


def test_translators_on_threads_share_a_model(sentences):
    model = libmt.Model(SHIPPED["de-tiny-int8"])
    expected = libmt.Translator(model).translate(sentences, beam_size=4)

    def work(i):
        translator = libmt.Translator(model)
        return [translator.translate(sentences, beam_size=4) for _ in range(3)]

    for per_thread in run_threads(4, work):
        assert per_thread == [expected] * 3


def test_one_translator_used_by_threads_is_serialised(de_translator, sentences):
    expected = de_translator.translate(sentences)
    results = run_threads(4, lambda i: de_translator.translate(sentences))
    assert results == [expected] * 4


def test_multithreaded_translator_matches_single(de_model, sentences):
    expected = libmt.Translator(de_model).translate(sentences, beam_size=4)
    for split in ("automatic", "sentences", "layers"):
        translator = libmt.Translator(de_model, num_threads=2, thread_split=split)
        assert translator.num_threads == 2
        assert translator.translate(sentences, beam_size=4) == expected


def test_translator_outlives_its_python_model(sentences):
    model = libmt.Model(SHIPPED["de-tiny-fp32"])
    expected = libmt.Translator(model).translate(sentences[:5])
    translator = libmt.Translator(model)
    vocabulary = model.vocabulary
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None  # the Python object is gone; the translator holds the C++ model
    assert translator.translate(sentences[:5]) == expected
    assert vocabulary.decode(vocabulary.encode("A dog.")) == "A dog."
    assert translator.model.languages == ("en", "de")


def test_model_from_bytes_outlives_the_bytes(sentences):
    data = bytearray(SHIPPED["de-tiny-fp32"].read_bytes())
    model = libmt.Model(data)
    data[:] = bytes(len(data))  # the model holds its own copy
    del data
    translator = libmt.Translator(model)
    del model
    gc.collect()
    assert translator.translate(sentences[:3]) == libmt.Translator(SHIPPED["de-tiny-fp32"]).translate(sentences[:3])
