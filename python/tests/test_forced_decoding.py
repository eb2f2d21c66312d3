"""Translator.score / score_batch, token log-probabilities, prefixes,
alternatives, repetition guards and word quality scores from Python: the
same numbers as the C++ session gives, through the package's own API."""
import re

import pytest

import libmt

from conftest import SHIPPED

MODEL = SHIPPED["de-tiny-int8"]


@pytest.fixture(scope="module")
def translator():
    return libmt.Translator(str(MODEL), max_batch_size=16, quality_scores=True)


def in_order(values):
    total = 0.0
    for v in values:  # float32 sums in order, as libmt: compare within float32's rounding
        total += v
    return total


@pytest.mark.parametrize("beam_size", [1, 4])
def test_score_gives_back_the_translation_log_probs(translator, sentences, beam_size):
    results = translator.translate(sentences, beam_size=beam_size, return_scores=True)
    scored = translator.score(sentences, [r.hypotheses[0] for r in results])
    by_ids = translator.score_batch([translator.model.vocabulary.encode(s) for s in sentences], [r.ids[0] for r in results])
    for result, text, ids in zip(results, scored, by_ids):
        assert len(result.token_log_probs[0]) == len(result.ids[0]) + 1
        assert ids.token_log_probs[0] == pytest.approx(result.token_log_probs[0], abs=1e-5)
        # A model may write pieces its vocabulary would not choose for the same text: then
        # scoring the text scores the vocabulary's own pieces.
        if text.ids[0] == result.ids[0]:
            assert text.token_log_probs[0] == pytest.approx(result.token_log_probs[0], abs=1e-5)
        assert text.hypotheses[0] == result.hypotheses[0]
        assert in_order(result.token_log_probs[0]) == pytest.approx(result.log_probs[0], abs=1e-4)


def test_score_errors(translator, sentences):
    with pytest.raises(ValueError, match="one target per source"):
        translator.score(sentences[:2], ["Ein Mann."])
    with pytest.raises(ValueError, match="target 1 token 0"):
        translator.score_batch([[10, 11], [12]], [[5], [10 ** 6]])
    with pytest.raises(TypeError):
        translator.score(sentences[:1], [None])


def test_prefixes_and_alternatives(translator, sentences):
    free = translator.translate(sentences[:1], return_scores=True)[0]
    same = translator.translate(sentences[:1], prefixes=[free.hypotheses[0].split(" ")[0]], return_scores=True)[0]
    assert same.ids == free.ids
    assert same.log_probs[0] == pytest.approx(free.log_probs[0], abs=1e-5)
    woman = translator.translate(sentences[:1], prefixes=["Eine Frau"], beam_size=4, num_hypotheses=4)[0]
    assert all(h.startswith("Eine Frau") for h in woman.hypotheses)
    alternatives = translator.translate(sentences[:1], prefixes=["Ein"], alternatives=3)[0]
    assert len(alternatives.hypotheses) == 3
    assert len({tuple(ids) for ids in alternatives.ids}) == 3
    assert all(h.startswith("Ein") for h in alternatives.hypotheses)
    with pytest.raises(TypeError, match="one prefix per source"):
        translator.translate(sentences[:1], prefixes="Ein")
    with pytest.raises(ValueError, match="alternatives"):
        translator.translate(sentences[:1], alternatives=99)
    # Prefixes beyond the first batch go with their own sentences.
    many = translator.translate(sentences[:20], prefixes=[None] * 17 + ["Eine Frau"])
    assert many[17].startswith("Eine Frau")
    assert many[:17] == translator.translate(sentences[:17])


def test_repetition_guards(translator):
    looping = ["increasingly", "salad", "the the the the"]
    for result in translator.translate(looping, no_repeat_ngram_size=1, return_scores=True):
        assert len(set(result.ids[0])) == len(result.ids[0])
    penalised = translator.translate(looping, repetition_penalty=2.0, return_scores=True)
    assert all(in_order(r.token_log_probs[0]) == pytest.approx(r.log_probs[0], abs=1e-4) for r in penalised)
    with pytest.raises(ValueError, match="repetition_penalty"):
        translator.translate(looping, repetition_penalty=0.5)
    text = translator.translate_paragraphs("salad. salad.", no_repeat_ngram_size=2).text
    assert isinstance(text, str)


def test_words_and_quality(translator, sentences):
    result = translator.translate(sentences[:3], return_scores=True)
    for r in result:
        text, words = r.hypotheses[0], r.words[0]
        assert words[0][0] == 0 and words[-1][1] == len(text)
        assert all(a[1] == b[0] for a, b in zip(words, words[1:]))
        assert r.quality[0] == pytest.approx(sum(w[2] for w in words) / len(words), abs=1e-5)
    scored = translator.score([sentences[0]] * 2, ["Ein Mann in einem blauen Hemd fährt Fahrrad.",
                                                 "Ein Mann in einem grünen Hemd fährt Fahrrad."])
    blue = [w for w in scored[0].words[0] if "blauen" in scored[0].hypotheses[0][w[0]:w[1]]][0]
    green = [w for w in scored[1].words[0] if "grünen" in scored[1].hypotheses[0][w[0]:w[1]]][0]
    assert green[2] < blue[2]
    plain = libmt.Translator(str(MODEL), max_batch_size=2)
    assert not plain.quality_scores
    assert plain.translate(sentences[:1], return_scores=True)[0].words is None


def test_alignments(sentences):
    translator = libmt.Translator(str(MODEL), max_batch_size=8, alignments=True)
    assert translator.alignments
    results = translator.translate(sentences[:4], beam_size=2, num_hypotheses=2)
    for source, r in zip(sentences[:4], results):
        assert len(r.alignments) == 2
        for ids, lps, rows in zip(r.ids, r.token_log_probs, r.alignments):
            assert len(rows) == len(lps)
            assert all(sum(row) == pytest.approx(1.0, abs=1e-5) for row in rows)
        assert len(r.source_ranges) == len(r.alignments[0][0])
        begin, end = r.source_ranges[1]  # "man" in "A man ..."
        assert source[begin:end].strip() == source.split(" ")[1]
    # A teacher-forced pass gives the same rows.
    scored = translator.score_batch([translator.model.vocabulary.encode(s) for s in sentences[:4]],
                                    [r.ids[0] for r in results])
    for r, s in zip(results, scored):
        for a, b in zip(r.alignments[0], s.alignments[0]):
            assert a == pytest.approx(b, abs=1e-5)
    assert libmt.Translator(str(MODEL)).translate(sentences[:1], return_scores=True)[0].alignments is None
    with pytest.raises(ValueError, match="alignment_layer"):
        libmt.Translator(str(MODEL), alignments=True, alignment_layer=7)


def test_html_paragraphs():
    translator = libmt.Translator(str(MODEL), max_batch_size=8, alignments=True)
    page = '<p>A <b>dog</b> runs.</p><ul><li>A <a href="x">woman</a> is reading.</li></ul><!-- c --><script>x<y</script>'
    out = translator.translate_paragraphs(page, format="html")
    assert "<b>Hund</b>" in out.text
    assert out.text.endswith("<!-- c --><script>x<y</script>")
    assert sorted(re.findall(r"<[^>]*>", out.text)) == sorted(re.findall(r"<[^>]*>", page))
    assert out.sentences == []
    with pytest.raises(ValueError, match="alignments"):
        libmt.Translator(str(MODEL)).translate_paragraphs(page, format="html")
    with pytest.raises(ValueError, match="format"):
        translator.translate_paragraphs(page, format="xml")


def test_batch_prefixes_by_ids(translator, sentences):
    source_ids = [translator.model.vocabulary.encode(s) for s in sentences[:3]]
    free = translator.translate_batch(source_ids)
    prefix = free[1].ids[0][:2]
    given = translator.translate_batch(source_ids, prefixes=[None, prefix])
    assert given[1].ids == free[1].ids
    assert given[0].ids == free[0].ids and given[2].ids == free[2].ids
    other = translator.translate_batch(source_ids, prefixes=[free[2].ids[0][:1]], alternatives=2)
    assert all(ids[0] == free[2].ids[0][0] for ids in other[0].ids)


def test_words_and_alignments_follow_the_hypotheses():
    # "\u2581Two" has an empty translation among its alternatives: its entries must be there too.
    translator = libmt.Translator(str(MODEL), quality_scores=True, alignments=True)
    result = translator.translate(["\u2581Two"], alternatives=4)[0]
    assert [] in result.ids and result.ids[0] != []
    assert len(result.words) == len(result.quality) == len(result.alignments) == len(result.hypotheses)
    for text, words, rows, log_probs in zip(result.hypotheses, result.words, result.alignments,
                                            result.token_log_probs):
        assert "".join(text[a:b] for a, b, _ in words) == text
        assert len(rows) == len(log_probs)
    assert result.words[result.ids.index([])] == []
