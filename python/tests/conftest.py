"""Fixtures of the libmt Python tests: the shipped models and sentences of
the source tree, and mt_translate (for byte-for-byte comparisons) when built."""

import os
import pathlib
import shutil

import pytest

import libmt

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
DATA = ROOT / "tests" / "data"

SHIPPED = {
    "de-tiny-fp32": MODELS / "en-de-tiny.mtm",
    "de-tiny-int8": MODELS / "en-de-tiny.int8.mtm",
    "zh-tiny-fp32": MODELS / "en-zh-tiny.mtm",
    "zh-tiny-int8": MODELS / "en-zh-tiny.int8.mtm",
}


def read_lines(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8").split("\n")[:-1]


@pytest.fixture(scope="session")
def sentences():
    return read_lines(DATA / "shipped_sentences.en")


@pytest.fixture(scope="session")
def de_model():
    return libmt.Model(SHIPPED["de-tiny-fp32"])


@pytest.fixture(scope="session")
def de_translator(de_model):
    return libmt.Translator(de_model)


@pytest.fixture(scope="session")
def mt_translate():
    """The mt_translate binary: $MT_TRANSLATE, else build/tools/mt_translate; the tests that compare with it skip without it."""
    path = os.environ.get("MT_TRANSLATE") or str(ROOT / "build" / "tools" / "mt_translate")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        if os.environ.get("MT_REQUIRE_MT_TRANSLATE") == "1":
            pytest.fail("MT_REQUIRE_MT_TRANSLATE=1 but no mt_translate at %s" % path)
        pytest.skip("no mt_translate at %s (set MT_TRANSLATE)" % path)
    return path


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def copy_model(tmp_path, key="de-tiny-fp32"):
    target = tmp_path / SHIPPED[key].name
    shutil.copyfile(SHIPPED[key], target)
    return target
