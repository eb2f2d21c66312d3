"""Threads and object lifetimes: translators on threads share one Model and
give the serial results; a translator keeps its model alive."""

import gc
import threading
import weakref

import pytest

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


def test_forced_logits_waits_for_a_translation_on_another_thread(sentences):
    translator = libmt.Translator(SHIPPED["de-tiny-int8"])
    vocabulary = translator.model.vocabulary
    source, target = vocabulary.encode(sentences[0]), vocabulary.encode("Ein Mann fährt Fahrrad.")
    logits = translator._forced_logits(source, target)
    expected = translator.translate(sentences, beam_size=4)
    stop = threading.Event()
    translations = []

    def translate():
        while not stop.is_set():
            translations.append(translator.translate(sentences, beam_size=4))

    thread = threading.Thread(target=translate)
    thread.start()
    try:
        got = [translator._forced_logits(source, target) for _ in range(200)]
    finally:
        stop.set()
        thread.join()
    assert all(g == logits for g in got)
    assert translations and all(t == expected for t in translations)


CALLS_ON_ITSELF = {
    "translate": lambda t: t.translate(["A dog."]),
    "translate_batch": lambda t: t.translate_batch([[5, 6]]),
    "score": lambda t: t.score(["A dog."], ["Ein Hund."]),
    "score_batch": lambda t: t.score_batch([[5, 6]], [[7]]),
    "translate_paragraphs": lambda t: t.translate_paragraphs("A dog."),
    "_forced_logits": lambda t: t._forced_logits([5, 6], [7]),
}


@pytest.mark.parametrize("num_threads", [1, 2])
@pytest.mark.parametrize("method", sorted(CALLS_ON_ITSELF))
def test_a_translator_called_from_its_own_on_token_raises(de_model, method, num_threads):
    # The lock is held while on_token runs: waiting for it there would hang forever.
    translator = libmt.Translator(de_model, num_threads=num_threads, thread_split="sentences")
    outcome = []

    def call():
        try:
            translator.translate(["A dog runs.", "Two men."], on_token=lambda *_: CALLS_ON_ITSELF[method](translator))
        except RuntimeError as error:
            outcome.append(str(error))

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(20)
    assert not thread.is_alive(), "deadlocked"
    assert len(outcome) == 1 and outcome[0].startswith(method + "(): called from inside this translator's own on_token")
    assert translator.translate(["A dog."]) == libmt.Translator(de_model).translate(["A dog."])  # usable again


def test_other_translators_in_on_token(de_model):
    translator, other = libmt.Translator(de_model), libmt.Translator(de_model)
    inside = []
    translator.translate(["A dog."], on_token=lambda sentence, step, *_: step == 0 and inside.append(
        other.translate(["Two men."])))
    assert inside == [other.translate(["Two men."])]
