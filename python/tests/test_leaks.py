"""No memory grows over many calls: 10,000 translations, models and
translators created and dropped, errors raised."""

import gc

import pytest

import libmt

from conftest import SHIPPED, rss_bytes


def growth(work, warmup, calls):
    for _ in range(warmup):
        work()
    gc.collect()
    before = rss_bytes()
    for _ in range(calls):
        work()
    gc.collect()
    return rss_bytes() - before


def test_translate_10000_calls(de_translator):
    grown = growth(lambda: de_translator.translate(["A dog."], return_scores=True), 500, 10000)
    assert grown < 2 << 20, "RSS grew by %d bytes over 10,000 calls" % grown


def test_errors_do_not_leak(de_translator):
    def failing():
        with pytest.raises(ValueError):
            de_translator.translate(["x" * 5000])
    grown = growth(failing, 200, 3000)
    assert grown < 2 << 20, "RSS grew by %d bytes over 3,000 errors" % grown


def test_models_and_translators_do_not_leak():
    data = SHIPPED["de-tiny-int8"].read_bytes()

    def cycle():
        model = libmt.Model(data)
        libmt.Translator(model, max_batch_size=2, max_source_length=32, max_target_length=32).translate(["A dog."])

    grown = growth(cycle, 20, 200)
    assert grown < 8 << 20, "RSS grew by %d bytes over 200 models" % grown
