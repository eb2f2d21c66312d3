"""Translator.translate(on_token=..., cancel=...) and translate_stream: the
streamed tokens are the result, a stopped sentence is flagged, a cancel from
another thread ends the call, and exceptions in the callback come back."""
import math
import pathlib
import threading

import pytest

import libmt

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "en-de-tiny.int8.mtm"
DATA = ROOT / "tests" / "data"


@pytest.fixture(scope="module")
def sources():
    return (DATA / "shipped_sentences.en").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("beam_size", [1, 4])
def test_stream_is_the_result(sources, beam_size):
    translator = libmt.Translator(str(MODEL), max_batch_size=16, num_threads=2, thread_split="sentences")
    results = translator.translate(sources, beam_size=beam_size, return_scores=True)
    events = list(translator.translate_stream(sources, beam_size=beam_size))
    eos = 2
    for i, result in enumerate(results):
        mine = [e for e in events if e.sentence == i]
        assert [e.step for e in mine] == list(range(len(mine)))
        assert [e.token for e in mine] == result.ids[0] + [eos]
        assert "".join(e.text for e in mine) == result.hypotheses[0]
        assert math.isclose(sum(e.log_prob for e in mine), result.log_probs[0], abs_tol=1e-4)


def test_stop_one_sentence(sources):
    translator = libmt.Translator(str(MODEL), max_batch_size=40)
    plain = translator.translate(sources, return_scores=True)
    stopped = translator.translate(sources, return_scores=True,
                                   on_token=lambda sentence, step, *_: sentence == 3 and step == 1)
    for i, (a, b) in enumerate(zip(plain, stopped)):
        if i == 3:
            assert b.stopped and len(b.ids[0]) == 2 and b.ids[0] == a.ids[0][:2]
        else:
            assert not b.stopped and a == b


def test_cancel_from_another_thread():
    translator = libmt.Translator(str(MODEL), max_batch_size=32)
    token = libmt.CancelToken()
    long = ["A man in a blue shirt is riding a bicycle down the street."] * 32
    timer = threading.Timer(0.02, token.cancel)
    timer.start()
    results = translator.translate(long, min_decoding_length=200, max_decoding_length=200, cancel=token,
                                   return_scores=True)
    timer.join()
    assert token.cancelled
    assert all(r.stopped and len(r.ids[0]) < 200 for r in results)
    token.reset()
    assert not token.cancelled
    assert not translator.translate(long[:1], cancel=token, return_scores=True)[0].stopped


def test_callback_errors_and_generator_close(sources):
    translator = libmt.Translator(str(MODEL))

    def boom(*_):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        translator.translate(sources[:4], on_token=boom)
    # The translator is usable again, and a generator closed early cancels the rest.
    stream = translator.translate_stream(sources)
    first = next(stream)
    assert first.sentence == 0 and first.step == 0
    stream.close()
    assert translator.translate(sources[:1]) == translator.translate(sources[:1])
    with pytest.raises(TypeError, match="sets on_token itself"):
        next(translator.translate_stream(sources, on_token=print))


def test_translation_cache(sources):
    translator = libmt.Translator(str(MODEL), max_batch_size=8)
    other = libmt.Translator(str(MODEL), max_batch_size=16, num_threads=2)
    cache = libmt.TranslationCache(max_entries=100)
    plain = translator.translate(sources, beam_size=4)
    assert translator.translate(sources, beam_size=4, cache=cache) == plain
    assert other.translate(sources, beam_size=4, cache=cache) == plain  # shared: all found
    stats = cache.stats()
    assert stats["hits"] == 40 and stats["misses"] == 40 and stats["entries"] == 40
    text = " ".join(sources)
    first = translator.translate_paragraphs(text, cache=cache)
    misses = cache.stats()["misses"]
    edited = translator.translate_paragraphs(text.replace("bicycle", "tricycle"), cache=cache)
    assert cache.stats()["misses"] == misses + 1
    assert len(edited.sentences) == len(first.sentences)
    cache.clear()
    assert cache.stats()["entries"] == 0 and cache.memory_size > 0
    with pytest.raises(ValueError, match="max_entries"):
        libmt.TranslationCache(max_entries=0)


def test_callback_errors_leave_the_cancel_token_alone(sources):
    translator = libmt.Translator(str(MODEL))
    token = libmt.CancelToken()

    def boom(*_):
        raise KeyError("from the callback")

    with pytest.raises(KeyError):
        translator.translate(sources[:4], on_token=boom, cancel=token)
    assert not token.cancelled
    result = translator.translate(sources[:2], cancel=token, return_scores=True)
    assert [r.hypotheses[0] for r in result] == translator.translate(sources[:2])
    assert not any(r.stopped for r in result)
    # Shared by two calls: one's failure does not stop the other.
    other = libmt.Translator(str(MODEL))
    started, failed = threading.Event(), threading.Event()
    outcome = []

    def slow(*_):
        started.set()
        failed.wait(10)

    def run():
        outcome.append(other.translate(sources[:1], on_token=slow, cancel=token, return_scores=True)[0])

    thread = threading.Thread(target=run)
    thread.start()
    started.wait(10)
    with pytest.raises(KeyError):
        translator.translate(sources[:1], on_token=boom, cancel=token)
    failed.set()
    thread.join()
    assert not outcome[0].stopped and not token.cancelled


def test_cancel_reaches_every_call_it_was_given_to(sources):
    translators = [libmt.Translator(str(MODEL)) for _ in range(2)]
    token = libmt.CancelToken()
    started = [threading.Event() for _ in translators]
    results = [None, None]
    long = ["A man in a blue shirt is riding a bicycle down the street."] * 4

    def run(i):
        results[i] = translators[i].translate(long, min_decoding_length=200, max_decoding_length=200, cancel=token,
                                              on_token=lambda *_: started[i].set(), return_scores=True)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for event in started:
        event.wait(10)
    token.cancel()
    for thread in threads:
        thread.join()
    assert all(r.stopped and len(r.ids[0]) < 200 for result in results for r in result)
    cancelled = libmt.CancelToken()
    cancelled.cancel()  # before the call: it stops at once
    assert all(r.stopped for r in translators[0].translate(long, cancel=cancelled, min_decoding_length=200,
                                                           max_decoding_length=200, return_scores=True))
